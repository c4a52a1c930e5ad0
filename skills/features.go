package skills

import (
	"fmt"
	"slices"
)

// Features is the diversity feature projection phi: the named fields of the
// RAW observation, concatenated in the given order, then standardised with
// their own statistics (fitted on the offline dataset) so distances between
// successor features are comparable across dimensions.
type Features struct {
	Fields []string `json:"fields"`
	Stats  Stats    `json:"stats"`
}

// Dim sums the dims of the projected fields of l (0 if a field is missing).
func (f Features) Dim(l Layout) int {
	n := 0
	for _, name := range f.Fields {
		fl, ok := l.Field(name)
		if !ok {
			return 0
		}
		n += fl.Dim
	}
	return n
}

// Validate checks the fields against layout l and the statistics' sizes.
func (f Features) Validate(l Layout) error {
	if len(f.Fields) == 0 {
		return fmt.Errorf("features project onto no field")
	}
	for i, name := range f.Fields {
		if _, ok := l.Field(name); !ok {
			return fmt.Errorf("feature field %q is not in layout %q", name, l.Name)
		}
		if slices.Contains(f.Fields[:i], name) {
			return fmt.Errorf("feature field %q repeated", name)
		}
	}
	if err := f.Stats.Validate(f.Dim(l)); err != nil {
		return fmt.Errorf("feature stats: %w", err)
	}
	return nil
}

// Projector computes phi from raw observations without allocating.
type Projector struct {
	obsDim int
	spans  [][2]int // [offset, dim] of each field in the observation
	norm   *Normaliser
}

// NewProjector prepares phi for layout l.
func NewProjector(l Layout, f Features) (*Projector, error) {
	if err := f.Validate(l); err != nil {
		return nil, fmt.Errorf("skills: projector: %w", err)
	}
	norm, err := NewNormaliser(f.Stats)
	if err != nil {
		return nil, err
	}
	p := &Projector{obsDim: l.Dim(), norm: norm}
	for _, name := range f.Fields {
		fl, _ := l.Field(name)
		p.spans = append(p.spans, [2]int{fl.Offset, fl.Dim})
	}
	return p, nil
}

// Dim is the feature size.
func (p *Projector) Dim() int { return p.norm.Dim() }

// Unstandardised writes the projected raw fields into dst (len Dim): the
// values FitStats is run on.
func (p *Projector) Unstandardised(rawObs, dst []float32) error {
	if len(rawObs) != p.obsDim || len(dst) != p.Dim() {
		return ErrDimMismatch
	}
	k := 0
	for _, s := range p.spans {
		k += copy(dst[k:], rawObs[s[0]:s[0]+s[1]])
	}
	return nil
}

// Project writes phi(rawObs) into dst (len Dim).
func (p *Projector) Project(rawObs, dst []float32) error {
	if err := p.Unstandardised(rawObs, dst); err != nil {
		return err
	}
	return p.norm.Apply(dst)
}
