package skills

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// NumJoints is the number of actuated Solo12 joints; joint vectors everywhere
// follow JointNames.
const NumJoints = 12

// JointNames is the project-wide joint order.
var JointNames = [NumJoints]string{
	"FL_HAA", "FL_HFE", "FL_KFE",
	"FR_HAA", "FR_HFE", "FR_KFE",
	"HL_HAA", "HL_HFE", "HL_KFE",
	"HR_HAA", "HR_HFE", "HR_KFE",
}

// Observation field names. Names and their order inside a layout are part of
// the contract: a bank records them and the runtime refuses a bank whose
// layout it cannot feed.
const (
	FieldBaseLinVel       = "base_lin_vel"
	FieldBaseAngVel       = "base_ang_vel"
	FieldProjectedGravity = "projected_gravity"
	FieldCommand          = "command"
	FieldJointPos         = "joint_pos"
	FieldJointVel         = "joint_vel"
	FieldPreviousAction   = "previous_action"
	FieldTarget           = "target"
	FieldHeightMap        = "height_map"
	FieldRemainingTime    = "remaining_time"
)

// Layout names of the two contract layouts.
const (
	LayoutLocomotion48  = "locomotion48"
	LayoutNavigation171 = "navigation171"
)

// Field is one named slice of an observation vector: obs[Offset:Offset+Dim].
type Field struct {
	Name   string `json:"name"`
	Offset int    `json:"offset"`
	Dim    int    `json:"dim"`
	Unit   string `json:"unit,omitempty"`
	Note   string `json:"note,omitempty"`
}

// Layout is an observation layout: contiguous fields from offset 0.
type Layout struct {
	Name   string  `json:"name"`
	Fields []Field `json:"fields"`
}

// Height-map grid (Navigation171's height_map field). Point (row r, column c)
// sits at x = -HeightMapExtent + r*HeightMapSpacing (x forward: row 0 is the
// rearmost row) and y = -HeightMapExtent + c*HeightMapSpacing (y left: column 0
// is the rightmost column) in the yaw-aligned base frame (origin under the
// base, x along the base heading projected on the ground, z up), and its value
// is the terrain height there minus the base height (about -0.235 m on flat
// ground for a standing robot). Values are stored row-major: index r*11 + c.
// HeightMapPoint is the single source of these coordinates.
const (
	HeightMapRows    = 11
	HeightMapCols    = 11
	HeightMapPoints  = HeightMapRows * HeightMapCols
	HeightMapSpacing = 0.1 // m between neighbouring points
	HeightMapExtent  = 0.5 // m: the grid spans [-0.5, +0.5] m in x and y
)

// HeightMapPoint returns the base-frame (x forward, y left) coordinates in
// metres of height-map entry i (row-major, 0 <= i < HeightMapPoints).
func HeightMapPoint(i int) (x, y float64) {
	r, c := i/HeightMapCols, i%HeightMapCols
	return -HeightMapExtent + float64(r)*HeightMapSpacing, -HeightMapExtent + float64(c)*HeightMapSpacing
}

// HeightMapSpec describes the height-map grid a bank was trained with; the
// runtime compares it with the grid its perception delivers.
type HeightMapSpec struct {
	Rows    int     `json:"rows"`
	Cols    int     `json:"cols"`
	Spacing float64 `json:"spacing_m"`
	Extent  float64 `json:"extent_m"`
	Order   string  `json:"order"`
	Value   string  `json:"value"`
}

// DefaultHeightMap is the grid described by the HeightMap* constants.
func DefaultHeightMap() HeightMapSpec {
	return HeightMapSpec{
		Rows:    HeightMapRows,
		Cols:    HeightMapCols,
		Spacing: HeightMapSpacing,
		Extent:  HeightMapExtent,
		Order:   "row-major; row r at x=-extent+r*spacing (forward), column c at y=-extent+c*spacing (left); yaw-aligned base frame",
		Value:   "terrain height minus base height (m)",
	}
}

// TargetDim is the size of the target field.
const TargetDim = 4

// EncodeTarget returns the target field of Navigation171: the goal position in
// the yaw-aligned base frame (x forward, y left, metres), then sin and cos of
// the yaw error goalYaw - baseYaw. dx, dy is the goal position minus the base
// position in the world frame; yaws are in radians about world z.
func EncodeTarget(dx, dy, baseYaw, goalYaw float64) [TargetDim]float32 {
	s, c := math.Sincos(baseYaw)
	yawErr := goalYaw - baseYaw
	return [TargetDim]float32{
		float32(c*dx + s*dy),
		float32(-s*dx + c*dy),
		float32(math.Sin(yawErr)),
		float32(math.Cos(yawErr)),
	}
}

// Locomotion48 returns the 48-dimensional locomotion layout (solo12.md).
func Locomotion48() Layout {
	return newLayout(LayoutLocomotion48, []Field{
		{Name: FieldBaseLinVel, Dim: 3, Unit: "m/s", Note: "base frame"},
		{Name: FieldBaseAngVel, Dim: 3, Unit: "rad/s", Note: "base frame (gyro)"},
		{Name: FieldProjectedGravity, Dim: 3, Unit: "1", Note: "world -z expressed in the base frame"},
		{Name: FieldCommand, Dim: 3, Unit: "m/s, m/s, rad/s", Note: "commanded vx, vy, yaw rate"},
		{Name: FieldJointPos, Dim: NumJoints, Unit: "rad", Note: "q - default pose"},
		{Name: FieldJointVel, Dim: NumJoints, Unit: "rad/s"},
		{Name: FieldPreviousAction, Dim: NumJoints, Unit: "1", Note: "last policy output in [-1,1]"},
	})
}

// Navigation171 returns the 171-dimensional obstacle-navigation layout
// (solo12.md).
func Navigation171() Layout {
	return newLayout(LayoutNavigation171, []Field{
		{Name: FieldBaseLinVel, Dim: 3, Unit: "m/s", Note: "base frame"},
		{Name: FieldBaseAngVel, Dim: 3, Unit: "rad/s", Note: "base frame (gyro)"},
		{Name: FieldProjectedGravity, Dim: 3, Unit: "1", Note: "world -z expressed in the base frame"},
		{Name: FieldJointPos, Dim: NumJoints, Unit: "rad", Note: "q - default pose"},
		{Name: FieldJointVel, Dim: NumJoints, Unit: "rad/s"},
		{Name: FieldPreviousAction, Dim: NumJoints, Unit: "1", Note: "last policy output in [-1,1]"},
		{Name: FieldTarget, Dim: TargetDim, Unit: "m, m, 1, 1", Note: "goal x, y in the yaw-aligned base frame; sin, cos of goal yaw - base yaw (EncodeTarget)"},
		{Name: FieldHeightMap, Dim: HeightMapPoints, Unit: "m", Note: "11x11 grid, 0.1 m spacing, +-0.5 m, row-major, x forward (HeightMapPoint); terrain height minus base height"},
		{Name: FieldRemainingTime, Dim: 1, Unit: "1", Note: "seconds left in the episode / episode length, clamped to [0,1]"},
	})
}

func newLayout(name string, fields []Field) Layout {
	off := 0
	for i := range fields {
		fields[i].Offset = off
		off += fields[i].Dim
	}
	return Layout{Name: name, Fields: fields}
}

// Layouts returns every layout the runtime can feed.
func Layouts() []Layout { return []Layout{Locomotion48(), Navigation171()} }

// ErrUnknownLayout reports a layout name that is not one of Layouts.
var ErrUnknownLayout = errors.New("skills: unknown observation layout")

// ErrLayoutMismatch reports a layout that differs from the one of the same
// name the runtime feeds.
var ErrLayoutMismatch = errors.New("skills: observation layout mismatch")

// LayoutByName returns the contract layout called name.
func LayoutByName(name string) (Layout, error) {
	for _, l := range Layouts() {
		if l.Name == name {
			return l, nil
		}
	}
	return Layout{}, fmt.Errorf("%w: %q", ErrUnknownLayout, name)
}

// Dim is the observation size.
func (l Layout) Dim() int {
	if len(l.Fields) == 0 {
		return 0
	}
	last := l.Fields[len(l.Fields)-1]
	return last.Offset + last.Dim
}

// Field returns the field called name.
func (l Layout) Field(name string) (Field, bool) {
	i := slices.IndexFunc(l.Fields, func(f Field) bool { return f.Name == name })
	if i < 0 {
		return Field{}, false
	}
	return l.Fields[i], true
}

// Validate checks that the fields are non-empty, uniquely named and tile
// [0, Dim) contiguously in order.
func (l Layout) Validate() error {
	if l.Name == "" {
		return errors.New("layout has no name")
	}
	if len(l.Fields) == 0 {
		return fmt.Errorf("layout %q has no fields", l.Name)
	}
	off := 0
	seen := make(map[string]bool, len(l.Fields))
	for i, f := range l.Fields {
		switch {
		case f.Name == "":
			return fmt.Errorf("layout %q field %d has no name", l.Name, i)
		case seen[f.Name]:
			return fmt.Errorf("layout %q repeats field %q", l.Name, f.Name)
		case f.Dim <= 0:
			return fmt.Errorf("layout %q field %q has dim %d", l.Name, f.Name, f.Dim)
		case f.Offset != off:
			return fmt.Errorf("layout %q field %q at offset %d, want %d (fields must be contiguous)", l.Name, f.Name, f.Offset, off)
		}
		seen[f.Name] = true
		off += f.Dim
	}
	return nil
}

// CheckFeedable reports whether got (typically a bank's layout) is exactly
// one of the layouts in feedable (what the runtime can build), comparing
// name, field names, order, offsets, dims and units; notes are documentation
// and are not compared. With no feedable given, Layouts() is used.
func CheckFeedable(got Layout, feedable ...Layout) error {
	if len(feedable) == 0 {
		feedable = Layouts()
	}
	for _, want := range feedable {
		if want.Name != got.Name {
			continue
		}
		if len(got.Fields) != len(want.Fields) {
			return fmt.Errorf("%w: %q has %d fields, runtime feeds %d", ErrLayoutMismatch, got.Name, len(got.Fields), len(want.Fields))
		}
		for i, w := range want.Fields {
			g := got.Fields[i]
			if g.Name != w.Name || g.Offset != w.Offset || g.Dim != w.Dim || g.Unit != w.Unit {
				return fmt.Errorf("%w: %q field %d is %s[%d:+%d] (%s), runtime feeds %s[%d:+%d] (%s)",
					ErrLayoutMismatch, got.Name, i, g.Name, g.Offset, g.Dim, g.Unit, w.Name, w.Offset, w.Dim, w.Unit)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: %q", ErrUnknownLayout, got.Name)
}

// DefaultFeatureFields returns the fields the diversity features phi project
// onto for a contract layout (dualforce.md): joint_pos for locomotion,
// base_lin_vel and base_ang_vel for navigation.
func DefaultFeatureFields(layoutName string) ([]string, error) {
	switch layoutName {
	case LayoutLocomotion48:
		return []string{FieldJointPos}, nil
	case LayoutNavigation171:
		return []string{FieldBaseLinVel, FieldBaseAngVel}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownLayout, layoutName)
}
