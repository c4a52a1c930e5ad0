package estimator

import (
	"errors"
	"math"

	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/hw/solo12"
)

// Config tunes the filter. The zero value is not useful; start from DefaultConfig.
type Config struct {
	// ContactForce is the vertical foot force (N) above which a foot counts as touching the
	// ground; Solo12 puts about 6 N on each foot when standing.
	ContactForce float64
	// ContactSettle is how long a foot must stay in contact before its odometry is trusted.
	ContactSettleTicks int
	// OdometryCutoffHz low-passes the leg-odometry velocity.
	OdometryCutoffHz float64
	// CorrectionHz sets how hard odometry corrects the integrated IMU velocity: the IMU carries
	// the high frequencies, odometry everything below this.
	CorrectionHz float64
	// IMUPosition is the IMU's position in the base frame; its frame is aligned with the base.
	IMUPosition [3]float64
}

// DefaultConfig is tuned on the simulated trot (see the package's tests for the measured error).
func DefaultConfig() Config {
	return Config{
		ContactForce:       1.5,
		ContactSettleTicks: 16,
		OdometryCutoffHz:   50,
		CorrectionHz:       8,
		IMUPosition:        [3]float64{0.10407, -0.00635, 0.01540},
	}
}

// State is the estimate after an update, in the base frame.
type State struct {
	LinVel           [3]float64 // m/s
	AngVel           [3]float64 // rad/s
	Attitude         [3]float64 // roll, pitch, yaw (rad)
	ProjectedGravity [3]float64 // world -z in the base frame (unit)
	Contact          [solo12.NumLegs]bool
	StanceFeet       int // feet whose odometry was used
}

// Estimator fuses the IMU and the legs. Not safe for concurrent use.
type Estimator struct {
	cfg        Config
	st         State
	contactFor [solo12.NumLegs]int
	odo        [3]float64
	primed     bool
}

// ErrConfig reports a filter configuration that cannot work.
var ErrConfig = errors.New("estimator: bad config")

// New returns an estimator at rest.
func New(cfg Config) (*Estimator, error) {
	if !(cfg.ContactForce > 0) || cfg.ContactSettleTicks < 0 || !(cfg.OdometryCutoffHz > 0) || !(cfg.CorrectionHz > 0) {
		return nil, ErrConfig
	}
	return &Estimator{cfg: cfg}, nil
}

// Reset forgets the velocity estimate and contact history (after a fall, a fault, a restart).
func (e *Estimator) Reset() {
	e.st = State{}
	e.contactFor = [solo12.NumLegs]int{}
	e.odo = [3]float64{}
	e.primed = false
}

// State returns the latest estimate.
func (e *Estimator) State() *State { return &e.st }

const gravity = proto.StandardGravity

// Update advances the estimate by dt seconds with a new IMU reading and joint state.
func (e *Estimator) Update(imu *proto.IMU, js *solo12.JointState, dt float64) {
	st := &e.st
	st.Attitude = imu.Attitude
	st.AngVel = imu.Gyroscope
	sr, cr := math.Sincos(imu.Attitude[0])
	sp, cp := math.Sincos(imu.Attitude[1])
	st.ProjectedGravity = [3]float64{sp, -cp * sr, -cp * cr}

	// Base acceleration: the accelerometer measures specific force f = a - g; add gravity back
	// (g_b * 9.81 with g_b the unit vector of gravity in the base frame) and remove the
	// centripetal and tangential terms of the IMU's lever arm, approximated by w x (w x r).
	w := st.AngVel
	r := e.cfg.IMUPosition
	wr := cross(w, r)
	centripetal := cross(w, wr)
	var acc [3]float64
	for i := range 3 {
		acc[i] = imu.Accelerometer[i] + gravity*st.ProjectedGravity[i] - centripetal[i]
	}

	// Leg odometry: a stance foot is still in the world, so the base moves at -(J qd + w x p).
	var pos, vel [solo12.NumLegs][3]float64
	solo12.FootKinematics(&js.Q, &js.Qd, &pos, &vel)
	var sum [3]float64
	n := 0
	for leg := range solo12.NumLegs {
		l := solo12.Leg(leg)
		q := l.Angles(&js.Q)
		_, jac := l.PositionAndJacobian(q)
		var tau [3]float64
		for k := range 3 {
			tau[k] = js.Tau[int(l.Joint(solo12.JointKind(k)))]
		}
		// Joint torques hold the ground's force: tau = J^T f with f the force the foot pushes
		// the ground with, so the ground pushes back with -f.
		f, ok := solveTransposed(jac, tau)
		inContact := ok && -f[2] > e.cfg.ContactForce
		st.Contact[leg] = inContact
		if inContact {
			e.contactFor[leg]++
		} else {
			e.contactFor[leg] = 0
		}
		if e.contactFor[leg] > e.cfg.ContactSettleTicks {
			wp := cross(w, pos[leg])
			for i := range 3 {
				sum[i] -= vel[leg][i] + wp[i]
			}
			n++
		}
	}
	st.StanceFeet = n

	// Predict with the IMU: in the rotating base frame dv/dt = a - w x v.
	wv := cross(w, st.LinVel)
	for i := range 3 {
		st.LinVel[i] += (acc[i] - wv[i]) * dt
	}
	if n > 0 {
		aOdo := lowpassGain(e.cfg.OdometryCutoffHz, dt)
		aCorr := lowpassGain(e.cfg.CorrectionHz, dt)
		for i := range 3 {
			meas := sum[i] / float64(n)
			if !e.primed {
				e.odo[i] = meas
			}
			e.odo[i] += aOdo * (meas - e.odo[i])
			if !e.primed {
				st.LinVel[i] = e.odo[i]
			}
			st.LinVel[i] += aCorr * (e.odo[i] - st.LinVel[i])
		}
		e.primed = true
	}
}

// lowpassGain is the first-order filter gain for cutoff fc at sample time dt.
func lowpassGain(fc, dt float64) float64 {
	rc := 1 / (2 * math.Pi * fc)
	return dt / (rc + dt)
}

func cross(a, b [3]float64) [3]float64 {
	return [3]float64{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
}

// solveTransposed solves J^T f = tau for f (3x3, Cramer's rule); false near a singular leg.
func solveTransposed(j [3][3]float64, tau [3]float64) ([3]float64, bool) {
	// a = J^T
	a := [3][3]float64{
		{j[0][0], j[1][0], j[2][0]},
		{j[0][1], j[1][1], j[2][1]},
		{j[0][2], j[1][2], j[2][2]},
	}
	det := a[0][0]*(a[1][1]*a[2][2]-a[1][2]*a[2][1]) -
		a[0][1]*(a[1][0]*a[2][2]-a[1][2]*a[2][0]) +
		a[0][2]*(a[1][0]*a[2][1]-a[1][1]*a[2][0])
	if math.Abs(det) < 1e-9 {
		return [3]float64{}, false
	}
	var f [3]float64
	for c := range 3 {
		m := a
		for r := range 3 {
			m[r][c] = tau[r]
		}
		f[c] = (m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) -
			m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) +
			m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])) / det
	}
	return f, true
}
