package fre

import (
	"fmt"
	"math"

	"github.com/dualforce/dualforce/skills"
)

// handMadeFeature reads one physical quantity from a raw (unstandardised)
// state.
type handMadeFeature func(raw []float32) float64

// handMade tabulates the 27 hand-made rewards of the Dual-Force paper's
// appendix over src: tracking of constant linear velocities in twelve
// directions and speeds (-|v_xy - v*|), of four yaw rates (-|w_z - w*|),
// standing still vertically (-|v_z|), upright (-|g_xy|), five body heights
// through the mean knee and hip angles (the base rises as the knees
// straighten), and lifting each foot (the leg's hip flexion). The layout has
// no base height, so heights are read from the joints.
func handMade(src *Source) ([]Reward, error) {
	field := func(name string) (int, error) {
		f, ok := src.Contract.Layout.Field(name)
		if !ok {
			return 0, fmt.Errorf("%w: layout %q has no field %q for the hand-made rewards", ErrSource, src.Contract.Layout.Name, name)
		}
		return f.Offset, nil
	}
	vel, err := field(skills.FieldBaseLinVel)
	if err != nil {
		return nil, err
	}
	ang, err := field(skills.FieldBaseAngVel)
	if err != nil {
		return nil, err
	}
	grav, err := field(skills.FieldProjectedGravity)
	if err != nil {
		return nil, err
	}
	q, err := field(skills.FieldJointPos)
	if err != nil {
		return nil, err
	}
	type spec struct {
		name string
		f    handMadeFeature
	}
	var specs []spec
	for _, v := range [][2]float64{
		{0, 0}, {0.25, 0}, {0.5, 0}, {0.75, 0}, {-0.25, 0}, {-0.5, 0},
		{0, 0.25}, {0, -0.25}, {0.25, 0.25}, {0.25, -0.25}, {-0.25, 0.25}, {-0.25, -0.25},
	} {
		specs = append(specs, spec{fmt.Sprintf("track_v(%+.2f,%+.2f)", v[0], v[1]), func(s []float32) float64 {
			return -math.Hypot(float64(s[vel])-v[0], float64(s[vel+1])-v[1])
		}})
	}
	for _, w := range []float64{-1, -0.5, 0.5, 1} {
		specs = append(specs, spec{fmt.Sprintf("track_yaw(%+.1f)", w), func(s []float32) float64 {
			return -math.Abs(float64(s[ang+2]) - w)
		}})
	}
	specs = append(specs,
		spec{"still_vz", func(s []float32) float64 { return -math.Abs(float64(s[vel+2])) }},
		spec{"upright", func(s []float32) float64 { return -math.Hypot(float64(s[grav]), float64(s[grav+1])) }},
	)
	// joint_pos is q - default pose, in JointNames order (HAA, HFE, KFE per leg).
	meanJoint := func(s []float32, j int) float64 {
		m := 0.0
		for leg := range 4 {
			m += float64(s[q+3*leg+j])
		}
		return m / 4
	}
	for _, k := range []float64{-0.4, 0, 0.4} {
		specs = append(specs, spec{fmt.Sprintf("knee_height(%+.1f)", k), func(s []float32) float64 { return -math.Abs(meanJoint(s, 2) - k) }})
	}
	for _, h := range []float64{-0.3, 0.3} {
		specs = append(specs, spec{fmt.Sprintf("hip_height(%+.1f)", h), func(s []float32) float64 { return -math.Abs(meanJoint(s, 1) - h) }})
	}
	for leg, name := range []string{"FL", "FR", "HL", "HR"} {
		specs = append(specs, spec{"lift_" + name, func(s []float32) float64 { return float64(s[q+3*leg+1]) }})
	}
	n, d := src.Len(), src.Dim
	raw := make([]float32, d)
	norm := src.Contract.Normaliser
	out := make([]Reward, len(specs))
	for k, sp := range specs {
		out[k] = Reward{Family: HandMade, Name: sp.name, table: make([]float32, n)}
	}
	for i := range n {
		for j, v := range src.States[i*d : (i+1)*d] {
			raw[j] = v*max(norm.Std[j], norm.Epsilon) + norm.Mean[j]
		}
		for k, sp := range specs {
			out[k].table[i] = float32(sp.f(raw))
		}
	}
	return out, nil
}
