package fre

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/dualforce/dualforce/trainer/nn"
)

// State is what resuming needs besides the source and the configuration:
// the model's parameters, the optimiser and the generator.
type State struct {
	Params []float32
	Adam   nn.AdamState[float32]
	RNG    []byte
}

// State returns a copy of the trainer's state.
func (t *Trainer) State() State {
	rng, err := t.pcg.MarshalBinary()
	if err != nil {
		panic(err) // PCG marshalling cannot fail
	}
	return State{Params: append([]float32(nil), t.model.Arena.Params()...), Adam: t.opt.State(), RNG: rng}
}

// Restore replaces the trainer's state with s (from a trainer of the same
// configuration and source).
func (t *Trainer) Restore(s State) error {
	if len(s.Params) != len(t.model.Arena.Params()) {
		return fmt.Errorf("%w: %d parameters, the model has %d", ErrCheckpoint, len(s.Params), len(t.model.Arena.Params()))
	}
	if err := t.pcg.UnmarshalBinary(s.RNG); err != nil {
		return fmt.Errorf("%w: generator: %w", ErrCheckpoint, err)
	}
	if err := t.opt.Restore(s.Adam); err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	copy(t.model.Arena.Params(), s.Params)
	return nil
}

// Digest identifies a source: its sizes, states, features and rewards. A
// run resumes only on the source it started with.
func (s *Source) Digest() [sha256.Size]byte {
	h := sha256.New()
	var b [8]byte
	for _, v := range []int{s.Dim, s.FeatureDim, s.Len()} {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		h.Write(b[:])
	}
	h.Write([]byte(s.Task + "\x00" + s.Contract.Layout.Name))
	for _, a := range [][]float32{s.States, s.Phi, s.RE, s.Contract.Normaliser.Mean, s.Contract.Normaliser.Std} {
		buf := make([]byte, 4*len(a))
		for i, v := range a {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		h.Write(buf)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
