package perception

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// Height-map grid (see the package doc): the same numbers as skills.HeightMapRows and friends.
const (
	GridRows    = 11
	GridCols    = 11
	GridPoints  = GridRows * GridCols
	GridSpacing = 0.1 // m between neighbouring points
	GridExtent  = 0.5 // m: the grid spans [-0.5, +0.5] m in x and y
)

// Wire constants.
const (
	Version = 1
	Size    = heightsOffset + 4*GridPoints // bytes in a datagram
)

// Magic opens every datagram.
var Magic = [4]byte{'D', 'F', 'P', 'M'}

const (
	versionOffset  = 4
	seqOffset      = 8
	stampOffset    = 16
	positionOffset = 24
	yawOffset      = 48
	heightsOffset  = 56
)

// Datagram is one perception sample.
type Datagram struct {
	Seq      uint64        // +1 per datagram of one sender
	Stamp    time.Duration // sender's monotonic clock
	Position [3]float64    // base position, world frame, m
	Yaw      float64       // base heading about world z, rad
	// Heights is the height map: terrain height minus base height (m) at the grid points, in
	// the grid order of the package doc.
	Heights [GridPoints]float32
}

// Fill writes the current perception sample into d: how a lockstep simulation hands perception to
// the runtime without a socket.
type Fill func(d *Datagram)

// Conditions a datagram (or a buffer to encode into) can be refused for; FormatError wraps one.
var (
	ErrShort     = errors.New("perception: datagram shorter than a version-1 datagram")
	ErrLong      = errors.New("perception: datagram longer than a version-1 datagram")
	ErrMagic     = errors.New("perception: not a perception datagram (bad magic)")
	ErrVersion   = errors.New("perception: unsupported datagram version")
	ErrNonFinite = errors.New("perception: NaN or Inf in a perception sample")
)

// FormatError says why a datagram was refused. errors.Is matches its Err, one of the sentinels
// above.
type FormatError struct {
	Err     error
	Len     int    // length of the datagram or buffer
	Version uint16 // the version found, for ErrVersion
	Field   string // "position", "yaw" or "heights", for ErrNonFinite
	Index   int    // element of Field, for ErrNonFinite
}

func (e *FormatError) Error() string {
	switch e.Err {
	case ErrShort, ErrLong:
		return fmt.Sprintf("%v: %d bytes, want %d", e.Err, e.Len, Size)
	case ErrVersion:
		return fmt.Sprintf("%v: v%d, want v%d", e.Err, e.Version, Version)
	case ErrNonFinite:
		return fmt.Sprintf("%v: %s[%d]", e.Err, e.Field, e.Index)
	}
	return e.Err.Error()
}

func (e *FormatError) Unwrap() error { return e.Err }

// Marshal encodes d into the first Size bytes of dst. It refuses a buffer shorter than Size
// (ErrShort) and a sample holding NaN or Inf (ErrNonFinite), writing nothing. It allocates only
// on error.
func (d *Datagram) Marshal(dst []byte) error {
	var fe FormatError
	if len(dst) < Size {
		fe = FormatError{Err: ErrShort, Len: len(dst)}
	} else if !d.finite(&fe) {
		fe.Len = len(dst)
	}
	if fe.Err != nil {
		return fe.escape()
	}
	dst = dst[:Size]
	copy(dst, Magic[:])
	binary.LittleEndian.PutUint16(dst[versionOffset:], Version)
	binary.LittleEndian.PutUint16(dst[versionOffset+2:], 0)
	binary.LittleEndian.PutUint64(dst[seqOffset:], d.Seq)
	binary.LittleEndian.PutUint64(dst[stampOffset:], uint64(d.Stamp))
	for k, v := range d.Position {
		binary.LittleEndian.PutUint64(dst[positionOffset+8*k:], math.Float64bits(v))
	}
	binary.LittleEndian.PutUint64(dst[yawOffset:], math.Float64bits(d.Yaw))
	for i, h := range d.Heights {
		binary.LittleEndian.PutUint32(dst[heightsOffset+4*i:], math.Float32bits(h))
	}
	return nil
}

// Unmarshal decodes a whole datagram into d. On error (a *FormatError) d is left unchanged. It
// allocates only on error.
func (d *Datagram) Unmarshal(src []byte) error {
	var fe FormatError
	if !d.decode(src, &fe) {
		return fe.escape()
	}
	return nil
}

// escape copies a FormatError built on the stack to the heap, so that only failures allocate.
func (e FormatError) escape() error { return &e }

// decode is Unmarshal reporting failure in *fe instead of an error value, so that a receiver
// counting garbage does not allocate.
func (d *Datagram) decode(src []byte, fe *FormatError) bool {
	*fe = FormatError{Len: len(src)}
	switch {
	case len(src) < Size:
		fe.Err = ErrShort
	case len(src) > Size:
		fe.Err = ErrLong
	case [4]byte(src) != Magic:
		fe.Err = ErrMagic
	}
	if fe.Err != nil {
		return false
	}
	if v := binary.LittleEndian.Uint16(src[versionOffset:]); v != Version {
		fe.Err, fe.Version = ErrVersion, v
		return false
	}
	var tmp Datagram
	tmp.Seq = binary.LittleEndian.Uint64(src[seqOffset:])
	tmp.Stamp = time.Duration(binary.LittleEndian.Uint64(src[stampOffset:]))
	for k := range tmp.Position {
		tmp.Position[k] = math.Float64frombits(binary.LittleEndian.Uint64(src[positionOffset+8*k:]))
	}
	tmp.Yaw = math.Float64frombits(binary.LittleEndian.Uint64(src[yawOffset:]))
	for i := range tmp.Heights {
		tmp.Heights[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[heightsOffset+4*i:]))
	}
	if !tmp.finite(fe) {
		return false
	}
	*d = tmp
	return true
}

// finite reports whether every float of d is finite; if not, it names the first bad one in fe.
func (d *Datagram) finite(fe *FormatError) bool {
	bad := func(field string, i int) bool {
		fe.Err, fe.Field, fe.Index = ErrNonFinite, field, i
		return false
	}
	for k, v := range d.Position {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return bad("position", k)
		}
	}
	if math.IsNaN(d.Yaw) || math.IsInf(d.Yaw, 0) {
		return bad("yaw", 0)
	}
	for i, h := range d.Heights {
		if h != h || h > math.MaxFloat32 || h < -math.MaxFloat32 {
			return bad("heights", i)
		}
	}
	return true
}
