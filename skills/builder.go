package skills

import (
	"errors"
	"fmt"
)

// Inputs are the named signals an observation is built from. Every side
// (collection, training, evaluation, runtime) fills the same struct and calls
// the same Builder, so the vector a policy sees is built one way only.
type Inputs struct {
	BaseLinVel       [3]float32         // base frame, m/s
	BaseAngVel       [3]float32         // base frame, rad/s (gyro)
	ProjectedGravity [3]float32         // world -z in the base frame (unit vector)
	Command          [3]float32         // commanded vx, vy (m/s), yaw rate (rad/s)
	JointPos         [NumJoints]float32 // ABSOLUTE measured q (rad); the builder subtracts the default pose
	JointVel         [NumJoints]float32 // rad/s
	PreviousAction   [NumJoints]float32 // last policy output a in [-1,1]
	Target           [TargetDim]float32 // EncodeTarget
	HeightMap        [HeightMapPoints]float32
	RemainingTime    float32 // seconds left in the episode; the builder divides by the episode length
}

// ErrNonFiniteObservation reports a NaN or Inf in a built observation; the
// vector is still filled so a caller can log it, but must not act on it.
var ErrNonFiniteObservation = errors.New("skills: non-finite observation")

type source uint8

const (
	srcBaseLinVel source = iota
	srcBaseAngVel
	srcProjectedGravity
	srcCommand
	srcJointPos
	srcJointVel
	srcPreviousAction
	srcTarget
	srcHeightMap
	srcRemainingTime
)

var sources = map[string]struct {
	src source
	dim int
}{
	FieldBaseLinVel:       {srcBaseLinVel, 3},
	FieldBaseAngVel:       {srcBaseAngVel, 3},
	FieldProjectedGravity: {srcProjectedGravity, 3},
	FieldCommand:          {srcCommand, 3},
	FieldJointPos:         {srcJointPos, NumJoints},
	FieldJointVel:         {srcJointVel, NumJoints},
	FieldPreviousAction:   {srcPreviousAction, NumJoints},
	FieldTarget:           {srcTarget, TargetDim},
	FieldHeightMap:        {srcHeightMap, HeightMapPoints},
	FieldRemainingTime:    {srcRemainingTime, 1},
}

type fieldPlan struct {
	src    source
	offset int
}

// Builder fills observation vectors for one layout. It is immutable after
// construction and safe for concurrent use; Build and Raw never allocate.
type Builder struct {
	layout         Layout
	dim            int
	plan           []fieldPlan
	defaultPose    [NumJoints]float32
	invEpisodeTime float32
	norm           *Normaliser
}

// NewBuilder prepares a builder for layout l. defaultPose is subtracted from
// the measured joint positions; episodeSeconds scales remaining_time and is
// required only when the layout has that field. norm may be nil for raw
// observations (data collection before statistics exist); Build then fails.
func NewBuilder(l Layout, defaultPose [NumJoints]float32, episodeSeconds float64, norm *Normaliser) (*Builder, error) {
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("skills: builder: %w", err)
	}
	b := &Builder{layout: l, dim: l.Dim(), defaultPose: defaultPose}
	for _, f := range l.Fields {
		s, ok := sources[f.Name]
		if !ok {
			return nil, fmt.Errorf("skills: builder: no input feeds field %q", f.Name)
		}
		if s.dim != f.Dim {
			return nil, fmt.Errorf("skills: builder: field %q has dim %d, input has %d", f.Name, f.Dim, s.dim)
		}
		if s.src == srcRemainingTime {
			if !(episodeSeconds > 0) || episodeSeconds > 1e9 {
				return nil, fmt.Errorf("skills: builder: layout %q needs a positive episode length, got %v s", l.Name, episodeSeconds)
			}
			b.invEpisodeTime = float32(1 / episodeSeconds)
		}
		b.plan = append(b.plan, fieldPlan{src: s.src, offset: f.Offset})
	}
	if norm != nil && norm.Dim() != b.dim {
		return nil, fmt.Errorf("skills: builder: normaliser has %d dims, layout %q has %d", norm.Dim(), l.Name, b.dim)
	}
	b.norm = norm
	return b, nil
}

// Layout returns the layout the builder fills.
func (b *Builder) Layout() Layout { return b.layout }

// Dim is the observation size.
func (b *Builder) Dim() int { return b.dim }

// Raw writes the unnormalised observation into dst (len Dim): the vector
// datasets store and normaliser statistics are fitted on.
func (b *Builder) Raw(in *Inputs, dst []float32) error {
	if len(dst) != b.dim {
		return ErrDimMismatch
	}
	for _, p := range b.plan {
		o := dst[p.offset:]
		switch p.src {
		case srcBaseLinVel:
			copy(o, in.BaseLinVel[:])
		case srcBaseAngVel:
			copy(o, in.BaseAngVel[:])
		case srcProjectedGravity:
			copy(o, in.ProjectedGravity[:])
		case srcCommand:
			copy(o, in.Command[:])
		case srcJointPos:
			for j := range NumJoints {
				o[j] = in.JointPos[j] - b.defaultPose[j]
			}
		case srcJointVel:
			copy(o, in.JointVel[:])
		case srcPreviousAction:
			copy(o, in.PreviousAction[:])
		case srcTarget:
			copy(o, in.Target[:])
		case srcHeightMap:
			copy(o, in.HeightMap[:])
		case srcRemainingTime:
			o[0] = min(max(in.RemainingTime*b.invEpisodeTime, 0), 1)
		}
	}
	if !allFinite(dst) {
		return ErrNonFiniteObservation
	}
	return nil
}

// ErrNoNormaliser reports Build on a builder made without a normaliser.
var ErrNoNormaliser = errors.New("skills: builder has no normaliser")

// Build writes the normalised observation (the policy input) into dst.
func (b *Builder) Build(in *Inputs, dst []float32) error {
	if b.norm == nil {
		return ErrNoNormaliser
	}
	if err := b.Raw(in, dst); err != nil {
		return err
	}
	return b.norm.Apply(dst)
}
