package nn

import "github.com/dualforce/dualforce/skills"

var skillsActivation = [...]skills.Activation{Identity: skills.ActNone, ReLU: skills.ActReLU, Tanh: skills.ActTanh}

// ToSkills copies a trained network into the bank's inference format. The
// copy shares nothing with m, so training may continue afterwards.
func ToSkills(m *MLP[float32]) skills.MLP {
	out := skills.MLP{Layers: make([]skills.Dense, len(m.Layers))}
	for i, d := range m.Layers {
		out.Layers[i] = skills.Dense{
			In: d.In, Out: d.Out,
			W:   append([]float32(nil), d.W...),
			B:   append([]float32(nil), d.B...),
			Act: skillsActivation[d.Act],
		}
	}
	return out
}
