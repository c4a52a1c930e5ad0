package sim

import (
	"fmt"
	"math"
	"strings"

	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/hw/solo12"
	"github.com/dualforce/dualforce/sim/worlds"
)

// Solo12 geometry and mass properties (spec/solo12.md, from the public URDF). Positions are
// given for the front-left leg; other legs mirror x (hind) and y (right).
const (
	hipX, hipY       = 0.1946, 0.0875 // base -> HAA
	upperLegY        = 0.014          // HAA -> HFE
	kneeY, kneeZ     = 0.03745, -0.16 // HFE -> KFE
	footY, footZ     = 0.008, -0.16   // KFE -> foot
	FootRadius       = 0.017          // m
	baseMass         = 1.16115091
	shoulderMass     = 0.14853845
	upperLegMass     = 0.14853845
	lowerLegMass     = 0.03070001
	footMass         = 0.00693606
	rotorInertia     = 4.5e-6 // kg m^2 at the motor
	upperLegRadius   = 0.016  // collision capsule
	lowerLegRadius   = 0.010
	baseHalfX        = 0.225 // body about 45 x 30 x 6 cm
	baseHalfY        = 0.15
	baseHalfZ        = 0.03
	imuX, imuY, imuZ = 0.10407, -0.00635, 0.01540
	defaultFriction  = 1.0
	physicsPeriod    = 0.001 // s, one control period
	robotGeomGroup   = 1     // height-map rays see only terrain (group 0)
	terrainGeomGroup = 0
	groundHalfExtent = 50.0
	fixedBaseHeight  = 0.5 // m, base height on the test rig (feet well clear of the ground)
	freeBaseStartZ   = 0.3 // m, placeholder; Reset places the base
)

// Armature is each joint's reflected rotor inertia, N^2 * rotor inertia (about 3.6e-4 kg m^2).
const Armature = solo12.GearRatio * solo12.GearRatio * rotorInertia

// TotalMass is the robot's mass from the spec tables (kg).
const TotalMass = baseMass + 4*(shoulderMass+upperLegMass+lowerLegMass+footMass)

// legSign is (x sign, y sign) of each leg in solo12 leg order FL, FR, HL, HR.
var legSign = [solo12.NumLegs][2]float64{{1, 1}, {1, -1}, {-1, 1}, {-1, -1}}

// ModelOptions choose variants of the generated model.
type ModelOptions struct {
	// FixedBase welds the base to the world at 0.5 m with the legs hanging free: a test rig.
	FixedBase bool
	// Timestep is the physics step in seconds; 0 means 1 ms.
	Timestep float64
}

// ModelXML generates the MJCF of Solo12 standing in a layout (nil means flat ground).
func ModelXML(layout *worlds.Layout, opt ModelOptions) ([]byte, error) {
	dt := opt.Timestep
	if dt == 0 {
		dt = physicsPeriod
	}
	if !(dt > 0 && dt <= physicsPeriod) {
		return nil, fmt.Errorf("sim: timestep %g s: want 0 < dt <= %g", dt, physicsPeriod)
	}
	friction := defaultFriction
	if layout != nil && layout.Friction > 0 {
		friction = layout.Friction
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<mujoco model="solo12">
  <compiler angle="radian" inertiafromgeom="false"/>
  <option timestep="%g" integrator="Euler" gravity="0 0 %g"/>
  <default>
    <joint type="hinge" limited="true" armature="%g" damping="0"/>
    <geom contype="1" conaffinity="0" group="%d" friction="%g 0.005 0.0001" rgba="0.7 0.7 0.75 1"/>
  </default>
  <worldbody>
    <geom name="ground" type="plane" size="%g %g 0.1" contype="0" conaffinity="1" group="%d" friction="%g 0.005 0.0001" rgba="0.8 0.8 0.8 1"/>
`, dt, -proto.StandardGravity, Armature, robotGeomGroup, friction, groundHalfExtent, groundHalfExtent, terrainGeomGroup, friction)
	if layout != nil {
		for _, box := range layout.Boxes {
			fmt.Fprintf(&b, `    <geom name="%s" type="box" pos="%g %g %g" size="%g %g %g" contype="0" conaffinity="1" group="%d" friction="%g 0.005 0.0001" rgba="0.6 0.45 0.3 1"/>
`, xmlName(box.Name), box.Center[0], box.Center[1], box.Center[2], box.Half[0], box.Half[1], box.Half[2], terrainGeomGroup, friction)
		}
		if g := layout.Goal; g != nil {
			// A site: visible in viewers, invisible to collisions and rays.
			fmt.Fprintf(&b, `    <site name="goal" type="cylinder" pos="%g %g 0.001" size="%g 0.001" rgba="0.2 0.7 0.3 0.5"/>
`, g.X, g.Y, g.Radius)
		}
	}
	baseZ := freeBaseStartZ
	if opt.FixedBase {
		baseZ = fixedBaseHeight
	}
	fmt.Fprintf(&b, `    <body name="base" pos="0 0 %g">
`, baseZ)
	if !opt.FixedBase {
		b.WriteString(`      <freejoint name="root"/>
`)
	}
	fmt.Fprintf(&b, `      <inertial pos="0 0 0" mass="%.8g" diaginertia="0.00578574 0.01938108 0.02476124"/>
      <geom name="base" type="box" size="%g %g %g"/>
      <site name="imu" pos="%g %g %g"/>
`, baseMass, baseHalfX, baseHalfY, baseHalfZ, imuX, imuY, imuZ)
	limits := solo12.PositionLimits()
	for leg := range solo12.NumLegs {
		writeLeg(&b, solo12.Leg(leg), limits)
	}
	b.WriteString(`    </body>
  </worldbody>
  <sensor>
    <accelerometer name="imu_acc" site="imu"/>
  </sensor>
</mujoco>
`)
	return []byte(b.String()), nil
}

func writeLeg(b *strings.Builder, leg solo12.Leg, limits [solo12.NumJoints]float64) {
	sx, sy := legSign[leg][0], legSign[leg][1]
	name := leg.String()
	haa, hfe, kfe := leg.Joint(solo12.HAA), leg.Joint(solo12.HFE), leg.Joint(solo12.KFE)
	// Products of inertia flip sign with every mirrored axis they involve.
	fmt.Fprintf(b, `      <body name="%[1]s_SHOULDER" pos="%[2]g %[3]g 0">
        <inertial pos="%[4]g %[5]g 0" mass="%.8[6]g" fullinertia="3.024e-5 4.1193e-4 4.1107e-4 %[7]g 0 0"/>
        <joint name="%[8]s" axis="1 0 0" range="%[9]g %[10]g"/>
        <body name="%[1]s_UPPER_LEG" pos="0 %[11]g 0">
          <inertial pos="1.377e-5 %[12]g -0.078707" mass="%.8[13]g" fullinertia="4.1107e-4 4.1193e-4 3.024e-5 0 0 %[14]g"/>
          <joint name="%[15]s" axis="0 1 0" range="%[16]g %[17]g"/>
          <geom name="%[1]s_UPPER_LEG" type="capsule" fromto="0 %[12]g 0 0 %[12]g %[18]g" size="%[19]g"/>
          <body name="%[1]s_LOWER_LEG" pos="0 %[20]g %[18]g">
            <inertial pos="0 %[21]g -0.08928215" mass="%.8[22]g" fullinertia="1.2024e-4 1.2029e-4 2.16e-6 0 0 %[23]g"/>
            <joint name="%[24]s" axis="0 1 0" range="%[25]g %[26]g"/>
            <geom name="%[1]s_LOWER_LEG" type="capsule" fromto="0 %[27]g 0 0 %[27]g %[28]g" size="%[29]g"/>
            <body name="%[1]s_FOOT" pos="0 %[27]g %[28]g">
              <inertial pos="0 0 0.00035767" mass="%.8[30]g" diaginertia="5.7e-7 8.4e-7 5.3e-7"/>
              <geom name="%[1]s_FOOT" type="sphere" size="%[31]g"/>
              <site name="%[1]s_FOOT"/>
            </body>
          </body>
        </body>
      </body>
`,
		name, sx*hipX, sy*hipY,
		-sx*0.078707, sy*0.01, shoulderMass, sx*sy*4.671e-5,
		haa, -limits[haa], limits[haa],
		sy*upperLegY,
		sy*0.01935853, upperLegMass, sy*4.671e-5,
		hfe, -limits[hfe], limits[hfe],
		kneeZ, upperLegRadius,
		sy*kneeY,
		sy*0.00787644, lowerLegMass, sy*3.05e-6,
		kfe, -limits[kfe], limits[kfe],
		sy*footY, footZ, lowerLegRadius,
		footMass, FootRadius,
	)
}

// xmlName keeps layout names safe inside an XML attribute and unique from the robot's names.
func xmlName(s string) string {
	var b strings.Builder
	b.WriteString("terrain_")
	for _, r := range s {
		if r < 128 && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// standingHeight is the base height with the joints at the standing pose and the feet on flat
// ground: thigh and shank at +-0.8 rad from vertical plus the foot radius.
var standingHeight = -kneeZ*math.Cos(0.8) - footZ*math.Cos(0.8) + FootRadius
