package smodice

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
	"github.com/dualforce/dualforce/trainer/dice"
	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/nn"
)

// CheckpointVersion is the checkpoint layout this package writes and reads.
const CheckpointVersion = 1

// checkpointMagic starts every checkpoint file.
var checkpointMagic = []byte("dualforce-smodice-checkpoint\n")

// maxCheckpointBytes bounds the file a reader accepts (networks, Adam
// moments and one reward per transition fit well below it).
const maxCheckpointBytes = 4 << 30

// Checkpoint is a run's whole state after an iteration: what resuming needs
// to continue bit-identically, and what export needs to build the bank.
type Checkpoint struct {
	Version int
	Config  Config
	Task    string
	// Digest identifies the raw data the run trains on.
	Digest [sha256.Size]byte
	// Contract carries the fitted normaliser and feature statistics.
	Contract skills.Contract
	// ObsDim and ActDim are the policy's sizes.
	ObsDim, ActDim int
	Disc           DiscReport
	DiscParams     []float32
	// Reward is r_E of every offline transition.
	Reward []float32
	DICE   dice.State
	// Estimate is computed from the weights of the checkpoint's iteration.
	Estimate Estimate
}

// Estimate describes the occupancy the trained policy imitates, from the
// whole-set weights w of one iteration.
type Estimate struct {
	Weights dice.WeightStats
	// Constraint is the paper's phi = log N + sum w (log w - r_E): an
	// estimate of KL(d_pi || d_E) up to a constant.
	Constraint float64
	// Psi is the offline successor-feature estimate sum_i w_i phi(s_i).
	Psi []float32
	// ExpertMass is the weight on expert-labelled transitions (NaN when
	// the labels are unknown).
	ExpertMass float64
}

// ErrCheckpoint wraps every reason a checkpoint file is refused.
var ErrCheckpoint = errors.New("smodice: bad checkpoint")

// The file is the magic, the header length (uint32 little-endian), the
// header (JSON: everything but the large arrays, and the arrays' names and
// lengths), the arrays (float32 little-endian, in header order), and the
// CRC-32C of everything after the magic. The reader checks the checksum
// and every length against the file's size before it allocates.
type header struct {
	Version  int             `json:"version"`
	Config   Config          `json:"config"`
	Task     string          `json:"task"`
	Digest   string          `json:"data_sha256"`
	Contract skills.Contract `json:"contract"`
	ObsDim   int             `json:"obs_dim"`
	ActDim   int             `json:"act_dim"`
	Disc     DiscReport      `json:"discriminator"`

	Iteration       int    `json:"iteration"`
	RNG             []byte `json:"rng"`
	ValueAdamSteps  int    `json:"value_adam_steps"`
	PolicyAdamSteps int    `json:"policy_adam_steps"`

	ESS        metrics.Num `json:"ess"`
	MaxW       metrics.Num `json:"max_w"`
	KL         metrics.Num `json:"kl"`
	Constraint metrics.Num `json:"constraint"`
	ExpertMass metrics.Num `json:"expert_mass"`

	Arrays []arrayEntry `json:"arrays"`
}

type arrayEntry struct {
	Name string `json:"name"`
	Len  int    `json:"len"`
}

// arrays lists the checkpoint's large arrays in file order.
func (ck *Checkpoint) arrays() []struct {
	name string
	data *[]float32
} {
	return []struct {
		name string
		data *[]float32
	}{
		{"disc_params", &ck.DiscParams}, {"reward", &ck.Reward},
		{"value", &ck.DICE.Value}, {"policy", &ck.DICE.Policy},
		{"value_adam_m", &ck.DICE.ValueAdam.M}, {"value_adam_v", &ck.DICE.ValueAdam.V},
		{"policy_adam_m", &ck.DICE.PolicyAdam.M}, {"policy_adam_v", &ck.DICE.PolicyAdam.V},
		{"psi", &ck.Estimate.Psi},
	}
}

// maxHeaderBytes bounds the JSON header.
const maxHeaderBytes = 16 << 20

// WriteCheckpoint replaces path atomically with ck.
func WriteCheckpoint(path string, ck *Checkpoint) error {
	h := header{
		Version: ck.Version, Config: ck.Config, Task: ck.Task, Digest: hex.EncodeToString(ck.Digest[:]),
		Contract: ck.Contract, ObsDim: ck.ObsDim, ActDim: ck.ActDim, Disc: ck.Disc,
		Iteration: ck.DICE.Iteration, RNG: ck.DICE.RNG,
		ValueAdamSteps: ck.DICE.ValueAdam.Steps, PolicyAdamSteps: ck.DICE.PolicyAdam.Steps,
		ESS: metrics.Num(ck.Estimate.Weights.ESS), MaxW: metrics.Num(ck.Estimate.Weights.Max),
		KL: metrics.Num(ck.Estimate.Weights.KL), Constraint: metrics.Num(ck.Estimate.Constraint),
		ExpertMass: metrics.Num(ck.Estimate.ExpertMass),
	}
	for _, a := range ck.arrays() {
		h.Arrays = append(h.Arrays, arrayEntry{Name: a.name, Len: len(*a.data)})
	}
	js, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("smodice: encode checkpoint: %w", err)
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
		for _, a := range ck.arrays() {
			if err := binary.Write(body, binary.LittleEndian, *a.data); err != nil {
				return err
			}
		}
		return binary.Write(w, binary.LittleEndian, crc.Sum32())
	})
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ReadCheckpoint reads and checks the checkpoint at path.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("smodice: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("smodice: %w", err)
	}
	if st.Size() > maxCheckpointBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, at most %d", ErrCheckpoint, path, st.Size(), int64(maxCheckpointBytes))
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("smodice: %w", err)
	}
	ck, err := DecodeCheckpoint(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ck, nil
}

// DecodeCheckpoint decodes and checks a checkpoint file's bytes.
func DecodeCheckpoint(b []byte) (*Checkpoint, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrCheckpoint, fmt.Sprintf(format, a...))
	}
	if !bytes.HasPrefix(b, checkpointMagic) {
		return nil, bad("not a SMODICE checkpoint")
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
	if n > maxHeaderBytes || int(n) > len(body) {
		return nil, bad("header of %d bytes in a body of %d", n, len(body))
	}
	var h header
	dec := json.NewDecoder(bytes.NewReader(body[:n]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return nil, bad("header: %v", err)
	}
	body = body[n:]
	ck := &Checkpoint{
		Version: h.Version, Config: h.Config, Task: h.Task, Contract: h.Contract, ObsDim: h.ObsDim, ActDim: h.ActDim, Disc: h.Disc,
		DICE: dice.State{
			Iteration: h.Iteration, RNG: h.RNG,
			ValueAdam: nn.AdamState[float32]{Steps: h.ValueAdamSteps}, PolicyAdam: nn.AdamState[float32]{Steps: h.PolicyAdamSteps},
		},
		Estimate: Estimate{
			Weights:    dice.WeightStats{ESS: float64(h.ESS), Max: float64(h.MaxW), KL: float64(h.KL)},
			Constraint: float64(h.Constraint), ExpertMass: float64(h.ExpertMass),
		},
	}
	if digest, err := hex.DecodeString(h.Digest); err != nil || len(digest) != len(ck.Digest) {
		return nil, bad("data digest %q", h.Digest)
	} else {
		copy(ck.Digest[:], digest)
	}
	arrays := ck.arrays()
	if len(h.Arrays) != len(arrays) {
		return nil, bad("%d arrays, want %d", len(h.Arrays), len(arrays))
	}
	total := 0
	for i, e := range h.Arrays {
		if e.Name != arrays[i].name || e.Len < 0 || e.Len > len(body)/4 {
			return nil, bad("array %d is %q of %d values, want %q within the file", i, e.Name, e.Len, arrays[i].name)
		}
		total += e.Len
	}
	if 4*total != len(body) {
		return nil, bad("arrays hold %d values, the file %d bytes of them", total, len(body))
	}
	for i, e := range h.Arrays {
		x := make([]float32, e.Len)
		for j := range x {
			x[j] = math.Float32frombits(binary.LittleEndian.Uint32(body[4*j:]))
		}
		body = body[4*e.Len:]
		*arrays[i].data = x
	}
	if err := ck.validate(); err != nil {
		return nil, bad("%v", err)
	}
	return ck, nil
}

// validate checks what the writer guarantees, so that a decoded checkpoint
// can be used without further checks; the networks' sizes are checked when
// they are rebuilt.
func (ck *Checkpoint) validate() error {
	switch {
	case ck.Version != CheckpointVersion:
		return fmt.Errorf("version %d, this reader knows %d", ck.Version, CheckpointVersion)
	case ck.ObsDim != ck.Contract.Layout.Dim() || ck.ActDim != skills.NumJoints:
		return fmt.Errorf("policy sizes %d -> %d do not fit layout %q", ck.ObsDim, ck.ActDim, ck.Contract.Layout.Name)
	case ck.DICE.Iteration < 0 || ck.DICE.Iteration > ck.Config.Iterations:
		return fmt.Errorf("iteration %d of %d", ck.DICE.Iteration, ck.Config.Iterations)
	case len(ck.Estimate.Psi) != ck.Contract.Features.Dim(ck.Contract.Layout):
		return fmt.Errorf("psi has %d values, features %d", len(ck.Estimate.Psi), ck.Contract.Features.Dim(ck.Contract.Layout))
	}
	if err := CheckTask(ck.Task, ck.Contract.Layout); err != nil {
		return err
	}
	if err := ck.Contract.Validate(); err != nil {
		return err
	}
	if err := ck.Config.validate(); err != nil {
		return err
	}
	return nil
}
