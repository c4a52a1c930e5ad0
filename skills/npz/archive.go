package npz

import (
	"archive/zip"
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// NpySuffix ends the member name of every array: numpy.load shows member
// "x.npy" under the key "x".
const NpySuffix = ".npy"

// Errors of the reader. Every error wraps exactly one of them.
var (
	// ErrZip reports a file that is not a readable zip, a member that cannot
	// be read to its end, or one compressed with another method than
	// stored or deflated.
	ErrZip = errors.New("npz: truncated or corrupt zip")
	// ErrTooLarge reports a file, member count or member over the limits.
	ErrTooLarge = errors.New("npz: over size limit")
	// ErrMissing reports a member the caller asked for and the file lacks.
	ErrMissing = errors.New("npz: missing member")
	// ErrDuplicate reports a member name that appears twice.
	ErrDuplicate = errors.New("npz: member appears twice")
	// ErrChecksum reports a member whose CRC-32 does not match its data.
	ErrChecksum = errors.New("npz: zip CRC-32 mismatch")
)

// zipEpoch is the modification time of every member, so equal contents are
// equal files.
var zipEpoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// Writer writes an archive member by member. Close finishes it.
type Writer struct {
	zw *zip.Writer
}

// NewWriter starts an archive on w.
func NewWriter(w io.Writer) *Writer { return &Writer{zw: zip.NewWriter(w)} }

func (w *Writer) create(name string) (io.Writer, error) {
	return w.zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store, Modified: zipEpoch})
}

// Raw adds a member holding data as it is.
func (w *Writer) Raw(name string, data []byte) error {
	f, err := w.create(name)
	if err == nil {
		_, err = f.Write(data)
	}
	if err != nil {
		return fmt.Errorf("npz: write %s: %w", name, err)
	}
	return nil
}

// WriteArray adds the member name+NpySuffix holding data as a .npy array of
// the given shape.
func WriteArray[T Element](w *Writer, name string, shape []int, data []T) error {
	f, err := w.create(name + NpySuffix)
	if err == nil {
		err = EncodeNpy(f, shape, data)
	}
	if err != nil {
		return fmt.Errorf("npz: write %s: %w", name, err)
	}
	return nil
}

// Close writes the zip directory.
func (w *Writer) Close() error {
	if err := w.zw.Close(); err != nil {
		return fmt.Errorf("npz: finish zip: %w", err)
	}
	return nil
}

// Limits bound what a Reader allocates for one file, whatever the file
// claims. A zero field means no bound of that kind.
type Limits struct {
	MaxFileBytes   int64 // size of the file
	MaxMembers     int   // zip members
	MaxMemberBytes int64 // one member, uncompressed
	MaxTotalBytes  int64 // all members read, uncompressed
}

// maxDeflateRatio bounds how much a deflated member may expand (deflate's
// own limit is about 1032:1), so a forged size cannot make a reader
// allocate beyond what the file can hold.
const maxDeflateRatio = 1100

// Reader reads the members of an archive. It is not safe for concurrent
// use.
type Reader struct {
	files  map[string]*zip.File
	names  []string
	size   int64
	budget int64
	lim    Limits
}

// NewReader opens the archive of size bytes in r, checking the file size
// and member count against lim and refusing duplicate member names.
func NewReader(r io.ReaderAt, size int64, lim Limits) (*Reader, error) {
	if lim.MaxFileBytes > 0 && size > lim.MaxFileBytes {
		return nil, fmt.Errorf("%w: file is %d bytes, limit %d", ErrTooLarge, size, lim.MaxFileBytes)
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrZip, err)
	}
	if lim.MaxMembers > 0 && len(zr.File) > lim.MaxMembers {
		return nil, fmt.Errorf("%w: %d members, limit %d", ErrTooLarge, len(zr.File), lim.MaxMembers)
	}
	rd := &Reader{files: make(map[string]*zip.File, len(zr.File)), size: size, budget: lim.MaxTotalBytes, lim: lim}
	for _, f := range zr.File {
		if rd.files[f.Name] != nil {
			return nil, fmt.Errorf("%w: %q", ErrDuplicate, f.Name)
		}
		rd.files[f.Name] = f
		rd.names = append(rd.names, f.Name)
	}
	slices.Sort(rd.names)
	return rd, nil
}

// Names lists the members, sorted.
func (rd *Reader) Names() []string { return rd.names }

// Has reports whether the archive holds member name.
func (rd *Reader) Has(name string) bool { return rd.files[name] != nil }

// open checks member name's declared sizes against the file, the limits
// (limit, when positive, bounds this member further) and the remaining
// budget, charges the budget and opens it.
func (rd *Reader) open(name string, limit int64) (*bufio.Reader, uint64, func() error, error) {
	f := rd.files[name]
	if f == nil {
		return nil, 0, nil, fmt.Errorf("%w: %s", ErrMissing, name)
	}
	size := f.UncompressedSize64
	switch f.Method {
	case zip.Store:
		if f.CompressedSize64 != size {
			return nil, 0, nil, fmt.Errorf("%w: stored member %q declares %d bytes compressed, %d uncompressed", ErrZip, name, f.CompressedSize64, size)
		}
	case zip.Deflate:
		if size/maxDeflateRatio > f.CompressedSize64 {
			return nil, 0, nil, fmt.Errorf("%w: member %q claims to expand %d bytes to %d", ErrZip, name, f.CompressedSize64, size)
		}
	default:
		return nil, 0, nil, fmt.Errorf("%w: %q uses unsupported compression method %d", ErrZip, name, f.Method)
	}
	if off, err := f.DataOffset(); err != nil || off < 0 || uint64(off)+f.CompressedSize64 > uint64(rd.size) {
		return nil, 0, nil, fmt.Errorf("%w: member %q of %d bytes does not fit the %d-byte file", ErrZip, name, f.CompressedSize64, rd.size)
	}
	for _, l := range []int64{limit, rd.lim.MaxMemberBytes} {
		if l > 0 && size > uint64(l) {
			return nil, 0, nil, fmt.Errorf("%w: %q is %d bytes uncompressed, limit %d", ErrTooLarge, name, size, l)
		}
	}
	if rd.lim.MaxTotalBytes > 0 {
		if size > uint64(rd.budget) {
			return nil, 0, nil, fmt.Errorf("%w: %q is %d bytes uncompressed, %d left of the file's budget", ErrTooLarge, name, size, rd.budget)
		}
		rd.budget -= int64(size)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, 0, nil, fmt.Errorf("%w: open %q: %w", ErrZip, name, err)
	}
	return bufio.NewReaderSize(rc, int(min(size+1, 1<<20))), size, rc.Close, nil
}

func memberErr(name string, err error) error {
	if errors.Is(err, zip.ErrChecksum) {
		return fmt.Errorf("%w: %q: %w", ErrChecksum, name, err)
	}
	return fmt.Errorf("%w: read %q: %w", ErrZip, name, err)
}

// Raw reads the whole member name (at most limit bytes when limit > 0)
// and checks its CRC-32.
func (rd *Reader) Raw(name string, limit int64) ([]byte, error) {
	br, size, done, err := rd.open(name, limit)
	if err != nil {
		return nil, err
	}
	defer done()
	buf := make([]byte, size)
	if _, err := io.ReadFull(br, buf); err != nil {
		return nil, memberErr(name, err)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("longer than its header says")
		}
		return nil, memberErr(name, err)
	}
	return buf, nil
}

// ReadArray reads member name+NpySuffix as a .npy array of T of exactly
// the given shape, streaming it into the result (the data are allocated
// once, after the header and the member's size agree with shape).
func ReadArray[T Element](rd *Reader, name string, shape []int) ([]T, error) {
	member := name + NpySuffix
	br, size, done, err := rd.open(member, 0)
	if err != nil {
		return nil, err
	}
	defer done()
	_, data, err := decodeNpy[T](br, size, shape)
	switch {
	case errors.Is(err, zip.ErrChecksum):
		return nil, memberErr(member, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %q: %w", ErrNpy, member, err)
	}
	return data, nil
}
