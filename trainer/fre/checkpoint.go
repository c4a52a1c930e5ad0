package fre

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"

	"github.com/dualforce/dualforce/skills"
)

// CheckpointVersion is the checkpoint layout this package writes and reads.
const CheckpointVersion = 1

var checkpointMagic = []byte("dualforce-fre-checkpoint\n")

// maxCheckpointBytes bounds what a reader accepts (a model with its Adam
// moments is tens of megabytes).
const maxCheckpointBytes = 1 << 30

// ErrCheckpoint wraps every reason a checkpoint is refused.
var ErrCheckpoint = errors.New("fre: bad checkpoint")

// Checkpoint is a run after some steps: the configuration, the source it
// trains on (by digest) and the trainer's state.
type Checkpoint struct {
	Config Config
	Digest [sha256.Size]byte
	State  State
}

// The file is the magic, the header length (uint32 little-endian), the
// JSON header, the arrays (float32 little-endian: parameters, Adam's first
// and second moments) and the CRC-32C of everything after the magic.
type checkpointHeader struct {
	Version   int    `json:"version"`
	Config    Config `json:"config"`
	Digest    string `json:"source_sha256"`
	AdamSteps int    `json:"adam_steps"`
	RNG       []byte `json:"rng"`
	Params    int    `json:"params"`
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// WriteCheckpoint replaces path atomically with ck.
func WriteCheckpoint(path string, ck *Checkpoint) error {
	s := &ck.State
	if len(s.Adam.M) != len(s.Params) || len(s.Adam.V) != len(s.Params) {
		return fmt.Errorf("%w: %d parameters with %d/%d moments", ErrCheckpoint, len(s.Params), len(s.Adam.M), len(s.Adam.V))
	}
	js, err := json.Marshal(checkpointHeader{
		Version: CheckpointVersion, Config: ck.Config, Digest: hex.EncodeToString(ck.Digest[:]),
		AdamSteps: s.Adam.Steps, RNG: s.RNG, Params: len(s.Params),
	})
	if err != nil {
		return fmt.Errorf("fre: encode checkpoint: %w", err)
	}
	return skills.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		crc := crc32.New(crcTable)
		if _, err := w.Write(checkpointMagic); err != nil {
			return err
		}
		body := io.MultiWriter(w, crc)
		if err := binary.Write(body, binary.LittleEndian, uint32(len(js))); err != nil {
			return err
		}
		if _, err := body.Write(js); err != nil {
			return err
		}
		for _, a := range [][]float32{s.Params, s.Adam.M, s.Adam.V} {
			if err := binary.Write(body, binary.LittleEndian, a); err != nil {
				return err
			}
		}
		return binary.Write(w, binary.LittleEndian, crc.Sum32())
	})
}

// ReadCheckpoint reads and checks the checkpoint at path.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("fre: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("fre: %w", err)
	}
	if st.Size() > maxCheckpointBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, at most %d", ErrCheckpoint, path, st.Size(), maxCheckpointBytes)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("fre: %w", err)
	}
	ck, err := DecodeCheckpoint(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ck, nil
}

// DecodeCheckpoint decodes and checks a checkpoint's bytes.
func DecodeCheckpoint(b []byte) (*Checkpoint, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrCheckpoint, fmt.Sprintf(format, a...))
	}
	if !bytes.HasPrefix(b, checkpointMagic) {
		return nil, bad("not an FRE checkpoint")
	}
	b = b[len(checkpointMagic):]
	if len(b) < 8 {
		return nil, bad("truncated")
	}
	body, tail := b[:len(b)-4], b[len(b)-4:]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(tail) {
		return nil, bad("checksum mismatch (truncated or corrupted)")
	}
	n := binary.LittleEndian.Uint32(body)
	body = body[4:]
	if int64(n) > int64(len(body)) {
		return nil, bad("header of %d bytes in a body of %d", n, len(body))
	}
	var h checkpointHeader
	dec := json.NewDecoder(bytes.NewReader(body[:n]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return nil, bad("header: %v", err)
	}
	body = body[n:]
	switch {
	case h.Version != CheckpointVersion:
		return nil, bad("version %d, this reader knows %d", h.Version, CheckpointVersion)
	case h.Params <= 0 || int64(h.Params)*12 != int64(len(body)):
		return nil, bad("%d parameters in %d bytes of arrays", h.Params, len(body))
	case h.AdamSteps < 0:
		return nil, bad("Adam step %d", h.AdamSteps)
	}
	if err := h.Config.Validate(); err != nil {
		return nil, bad("%v", err)
	}
	if err := h.Config.Arch.Validate(); err != nil {
		return nil, bad("%v", err)
	}
	ck := &Checkpoint{Config: h.Config}
	if d, err := hex.DecodeString(h.Digest); err != nil || len(d) != sha256.Size {
		return nil, bad("source digest %q", h.Digest)
	} else {
		copy(ck.Digest[:], d)
	}
	read := func() []float32 {
		x := make([]float32, h.Params)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:]))
		}
		body = body[4*h.Params:]
		return x
	}
	ck.State = State{Params: read(), RNG: h.RNG}
	ck.State.Adam.Steps, ck.State.Adam.M, ck.State.Adam.V = h.AdamSteps, read(), read()
	return ck, nil
}
