package skills

import (
	"fmt"
	"strconv"
	"strings"
)

// Features is the diversity feature projection phi: the named fields of the
// RAW observation, concatenated in the given order, then standardised with
// their own statistics (fitted on the offline dataset) so distances between
// successor features are comparable across dimensions. A name may select one
// value of a field, "target[1]" (the goal's sideways position), so that phi
// can hold the one direction a diversity force should push along, and may
// be listed k times: it then counts k times in the distances between
// successor features (sqrt(k) in the distance) and in the Van der Waals
// reward (k), a gain on that direction. One standardised value alone is too
// weak a direction for the force to part the skills along (docs/results.md,
// "where the diversity force pushes").
type Features struct {
	Fields []string `json:"fields"`
	Stats  Stats    `json:"stats"`
}

// Dim sums the dims of the projected fields of l (0 if a field is missing).
func (f Features) Dim(l Layout) int {
	n := 0
	for _, name := range f.Fields {
		fl, err := featureSpan(l, name)
		if err != nil {
			return 0
		}
		n += fl.Dim
	}
	return n
}

// featureSpan is the part of l's observation a feature name projects onto: a
// whole field ("height_map") or one of its values ("target[1]").
func featureSpan(l Layout, name string) (Field, error) {
	field, index, one := strings.Cut(name, "[")
	fl, ok := l.Field(field)
	if !ok {
		return Field{}, fmt.Errorf("feature field %q is not in layout %q", field, l.Name)
	}
	if !one {
		return fl, nil
	}
	digits, closed := strings.CutSuffix(index, "]")
	i, err := strconv.Atoi(digits)
	if !closed || err != nil || i < 0 || i >= fl.Dim {
		return Field{}, fmt.Errorf("feature %q: want %s[i] with 0 <= i < %d", name, field, fl.Dim)
	}
	return Field{Name: name, Offset: fl.Offset + i, Dim: 1, Unit: fl.Unit}, nil
}

// Validate checks the fields against layout l and the statistics' sizes.
func (f Features) Validate(l Layout) error {
	if len(f.Fields) == 0 {
		return fmt.Errorf("features project onto no field")
	}
	for _, name := range f.Fields {
		if _, err := featureSpan(l, name); err != nil {
			return err
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
		fl, _ := featureSpan(l, name)
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
