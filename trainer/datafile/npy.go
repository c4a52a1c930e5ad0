package datafile

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sbinet/npyio/npy"
)

// The element types a dataset column may have, as numpy spells them.
const (
	dtypeFloat32 = "<f4"
	dtypeBool    = "|b1"
	dtypeInt32   = "<i4"
)

// element is a Go type stored in a column.
type element interface{ float32 | bool | int32 }

func dtypeOf[T element]() (string, int) {
	var zero T
	switch any(zero).(type) {
	case float32:
		return dtypeFloat32, 4
	case int32:
		return dtypeInt32, 4
	}
	return dtypeBool, 1
}

const (
	npyMagic = "\x93NUMPY"
	// npyAlign is where numpy starts the data: the preamble is padded to a multiple of 64 bytes.
	npyAlign = 64
	// maxHeaderLen bounds the header a reader accepts (numpy's own stay under 200 bytes).
	maxHeaderLen = 4096
)

// npyHeader returns the .npy v1.0 preamble for an array: magic, version, header length and the
// header dict, space-padded and newline-terminated so the data is 64-byte aligned.
func npyHeader(dtype string, shape []int) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", dtype, tuple)
	pre := len(npyMagic) + 4
	pad := (npyAlign - (pre+len(dict)+1)%npyAlign) % npyAlign
	var b bytes.Buffer
	b.WriteString(npyMagic)
	b.Write([]byte{1, 0})
	_ = binary.Write(&b, binary.LittleEndian, uint16(len(dict)+pad+1))
	b.WriteString(dict)
	b.WriteString(strings.Repeat(" ", pad))
	b.WriteByte('\n')
	return b.Bytes()
}

// writeArray streams data as one .npy array of the given shape into w, in chunks, without
// copying the array.
func writeArray[T element](w io.Writer, shape []int, data []T) error {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if n != len(data) {
		return fmt.Errorf("datafile: %d values for shape %v", len(data), shape)
	}
	dtype, size := dtypeOf[T]()
	if _, err := w.Write(npyHeader(dtype, shape)); err != nil {
		return err
	}
	const chunk = 1 << 14
	buf := make([]byte, 0, chunk*size)
	for start := 0; start < len(data); start += chunk {
		buf = buf[:0]
		for _, v := range data[start:min(start+chunk, len(data))] {
			switch v := any(v).(type) {
			case float32:
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			case int32:
				buf = binary.LittleEndian.AppendUint32(buf, uint32(v))
			case bool:
				b := byte(0)
				if v {
					b = 1
				}
				buf = append(buf, b)
			}
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// headerRE is the one header form accepted: numpy's own (keys sorted, C order) with a dtype a
// dataset column can have and a rank-1 or rank-2 shape. npyio's header parser slices at fixed
// offsets and panics on anything else, so nothing reaches it unless this matches.
var headerRE = regexp.MustCompile(`^\{'descr': '(<f4|\|b1|<i4)', 'fortran_order': False, 'shape': \(([0-9]{1,10}(?:, [0-9]{1,10})?),?\), \} *\n$`)

// readPreamble reads and checks an .npy preamble, returning it (to hand to npyio), the dtype
// and the shape.
func readPreamble(r io.Reader) (pre []byte, dtype string, shape []int, err error) {
	fixed := make([]byte, len(npyMagic)+4)
	if _, err := io.ReadFull(r, fixed); err != nil {
		return nil, "", nil, fmt.Errorf("truncated .npy preamble: %w", err)
	}
	if string(fixed[:len(npyMagic)]) != npyMagic {
		return nil, "", nil, errors.New("no .npy magic")
	}
	if fixed[6] != 1 || fixed[7] != 0 {
		return nil, "", nil, fmt.Errorf(".npy version %d.%d, want 1.0", fixed[6], fixed[7])
	}
	n := int(binary.LittleEndian.Uint16(fixed[8:]))
	if n > maxHeaderLen {
		return nil, "", nil, fmt.Errorf(".npy header of %d bytes", n)
	}
	pre = append(fixed, make([]byte, n)...)
	if _, err := io.ReadFull(r, pre[len(fixed):]); err != nil {
		return nil, "", nil, fmt.Errorf("truncated .npy header: %w", err)
	}
	m := headerRE.FindSubmatch(pre[len(fixed):])
	if m == nil {
		return nil, "", nil, fmt.Errorf("unsupported .npy header %q", truncate(pre[len(fixed):], 120))
	}
	for _, tok := range strings.Split(string(m[2]), ", ") {
		d, err := strconv.Atoi(tok)
		if err != nil || d > math.MaxInt32 {
			return nil, "", nil, fmt.Errorf(".npy dimension %q", tok)
		}
		shape = append(shape, d)
	}
	return pre, string(m[1]), shape, nil
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// maxDeflateRatio bounds how much a deflated member may expand (deflate's own limit is about
// 1032:1), so a forged size cannot make a reader allocate beyond what the file can hold.
const maxDeflateRatio = 1100

// readMember decodes zip member f of an archive of archiveSize bytes as a .npy array of exactly
// dtype and shape. The member's declared size must fit the archive and match the header; its
// data is decoded with npyio and then read to the end, which makes the zip reader verify the
// member's checksum.
func readMember[T element](f *zip.File, archiveSize int64, shape []int) ([]T, error) {
	want, size := dtypeOf[T]()
	n := uint64(1)
	for _, d := range shape {
		n *= uint64(d)
	}
	switch f.Method {
	case zip.Store:
		if f.CompressedSize64 != f.UncompressedSize64 {
			return nil, fmt.Errorf("stored member declares %d bytes compressed, %d uncompressed", f.CompressedSize64, f.UncompressedSize64)
		}
	case zip.Deflate:
		if f.UncompressedSize64/maxDeflateRatio > f.CompressedSize64 {
			return nil, fmt.Errorf("member claims to expand %d bytes to %d", f.CompressedSize64, f.UncompressedSize64)
		}
	default:
		return nil, fmt.Errorf("zip compression method %d (want stored or deflated)", f.Method)
	}
	if off, err := f.DataOffset(); err != nil || off < 0 || uint64(off)+f.CompressedSize64 > uint64(archiveSize) {
		return nil, fmt.Errorf("member of %d bytes does not fit the %d-byte archive (truncated?)", f.CompressedSize64, archiveSize)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, int(min(f.UncompressedSize64+1, 1<<20)))
	pre, dtype, got, err := readPreamble(br)
	if err != nil {
		return nil, err
	}
	if dtype != want || !slices.Equal(got, shape) {
		return nil, fmt.Errorf("array is %s %v, want %s %v", dtype, got, want, shape)
	}
	if f.UncompressedSize64 != uint64(len(pre))+n*uint64(size) {
		return nil, fmt.Errorf("member holds %d bytes, a %s array of shape %v needs %d", f.UncompressedSize64, dtype, shape, uint64(len(pre))+n*uint64(size))
	}
	rd, err := npy.NewReader(io.MultiReader(bytes.NewReader(pre), br))
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	data := make([]T, n)
	if n > 0 {
		if err := rd.Read(&data); err != nil {
			return nil, fmt.Errorf("npy: %w", err)
		}
	}
	// npyio stops after the last element and takes a clean end of stream for zeros: reading one
	// more byte proves the data was all there and makes the zip reader check the CRC.
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("trailing bytes after the array")
		}
		return nil, err
	}
	return data, nil
}
