package core

import (
	"math"
	"time"

	"github.com/dualforce/dualforce/hw/solo12"
	"github.com/dualforce/dualforce/runtime/corebus"
)

// Fault codes, stable for operators and logs.
const (
	faultLinkTimeout    = "link_timeout"
	faultOverrun        = "loop_overrun"
	faultSliderEStop    = "slider_estop"
	faultSliderLost     = "slider_lost"
	faultOperatorEStop  = "operator_estop"
	faultDriverError    = "driver_error"
	faultJointLimit     = "joint_limit"
	faultJointVelocity  = "joint_velocity"
	faultAttitude       = "attitude"
	faultNonFinite      = "non_finite"
	faultCalibration    = "calibration"
	faultNotReady       = "drivers_not_ready"
	faultPerceptionLost = "perception_lost"
)

// FaultCodes lists every fault code the supervisor latches, for metrics labels and docs.
var FaultCodes = []string{
	faultLinkTimeout, faultOverrun, faultSliderEStop, faultSliderLost, faultOperatorEStop,
	faultDriverError, faultJointLimit, faultJointVelocity, faultAttitude, faultNonFinite,
	faultCalibration, faultNotReady, faultPerceptionLost,
}

// Reasons are constant strings so that building an event never allocates.
const (
	reasonLinkTimeout   = "no sensor packet within the link timeout"
	reasonOverrun       = "the loop overran its deadline more often in a row than the budget allows"
	reasonSliderEStop   = "slider box E-stop pressed"
	reasonSliderLost    = "slider box silent or disconnected"
	reasonOperatorEStop = "operator E-stop"
	reasonAttitude      = "roll or pitch beyond the attitude limit"
	reasonNonFiniteIn   = "NaN or Inf in the joint state"
	reasonNonFiniteObs  = "NaN or Inf in the observation"
	reasonNonFiniteAct  = "NaN or Inf in the policy action"
	reasonCalibration   = "index calibration failed"
	reasonNotReady      = "drivers not ready within 5 s of enabling"
	reasonPerception    = "navigation skill running without perception"
	reasonReady         = "every driver ready"
	reasonStandUp       = "calibrated: standing up"
	reasonStood         = "standing"
	reasonAutoRun       = "auto-run after standing up"
	reasonStopped       = "motors off"
	reasonOperator      = "operator"
	reasonDeadMan       = "operator dead-man: stand still"
	reasonReset         = "fault reset by the operator"
)

const readyTimeout = 5 * time.Second

// reasonTable holds the per-joint and per-driver reasons, built once.
type reasonTable struct {
	jointLimit, jointVelocity [solo12.NumJoints]string
	driver                    [6]string
}

func newReasonTable() reasonTable {
	var r reasonTable
	for j := range solo12.NumJoints {
		name := solo12.Joint(j).String()
		r.jointLimit[j] = "joint " + name + " outside its position limits"
		r.jointVelocity[j] = "joint " + name + " faster than the velocity limit"
	}
	for d := range r.driver {
		r.driver[d] = "driver " + string(rune('0'+d)) + " reports an error code"
	}
	return r
}

// trip latches a fault and switches to the damping controller.
func (c *Core) trip(now time.Duration, code, reason string) {
	if c.fault != "" {
		return
	}
	c.fault = code
	c.share()
	c.emit(corebus.Event{Kind: corebus.EventFault, Fault: code, Reason: reason})
	if c.phase != PhaseStop && c.phase != PhaseOff {
		c.enter(PhaseDamp, now, code)
	}
}

// supervise runs every safety check of this tick.
func (c *Core) supervise(in *Input) {
	if c.fault != "" {
		return
	}
	if c.sawSensor && in.Now-c.lastFresh > c.limits.LinkTimeout {
		c.trip(in.Now, faultLinkTimeout, reasonLinkTimeout)
		return
	}
	if in.Overrun {
		c.overruns++
		if c.overruns > c.limits.OverrunBudget {
			c.trip(in.Now, faultOverrun, reasonOverrun)
			return
		}
	} else {
		c.overruns = 0
	}
	switch {
	case in.Slider != nil && in.Slider.Latched:
		c.trip(in.Now, faultSliderEStop, reasonSliderEStop)
		return
	case c.cfg.SliderRequired && (in.Slider == nil || in.Slider.Fault()):
		c.trip(in.Now, faultSliderLost, reasonSliderLost)
		return
	}
	if c.phase == PhaseOff || in.Sensor == nil || !in.Fresh {
		return
	}
	if faults := solo12.DriverFaults(in.Sensor); faults != 0 {
		for j := range solo12.NumJoints {
			if faults&(1<<j) != 0 {
				c.trip(in.Now, faultDriverError, c.reasons.driver[solo12.MotorNumbers()[j]/2])
				return
			}
		}
	}
	if c.phase == PhaseWaitReady && in.Now-c.since > readyTimeout {
		c.trip(in.Now, faultNotReady, reasonNotReady)
		return
	}
	if !c.powered() {
		return
	}
	l := &c.limits
	lower, upper := &l.JointLower, &l.JointUpper
	if c.phase == PhaseStandUp {
		lower, upper = &c.standLower, &c.standUpper
	}
	for j := range c.js.Q {
		q, qd := c.js.Q[j], c.js.Qd[j]
		switch {
		case math.IsNaN(q+qd) || math.IsInf(q+qd, 0):
			c.trip(in.Now, faultNonFinite, reasonNonFiniteIn)
			return
		case q < lower[j] || q > upper[j]:
			c.trip(in.Now, faultJointLimit, c.reasons.jointLimit[j])
			return
		case math.Abs(qd) > l.MaxJointVelocity:
			c.trip(in.Now, faultJointVelocity, c.reasons.jointVelocity[j])
			return
		}
	}
	att := &in.Sensor.IMU.Attitude
	if math.Abs(att[0]) > l.MaxAttitude || math.Abs(att[1]) > l.MaxAttitude {
		c.trip(in.Now, faultAttitude, reasonAttitude)
	}
}

// reset clears a latched fault or operator E-stop once its cause is gone; the robot stays in
// damping until the operator asks it to stand.
func (c *Core) reset(in *Input) (bool, string) {
	if in.Slider != nil && in.Slider.Latched {
		return false, "slider box E-stop still latched: release the button and reset the box"
	}
	if c.sawSensor && in.Now-c.lastFresh > c.limits.LinkTimeout {
		return false, "link still down"
	}
	if c.fault == "" && !c.estop {
		return true, ""
	}
	c.fault, c.estop, c.overruns = "", false, 0
	c.share()
	c.emit(corebus.Event{Kind: corebus.EventFaultCleared, Reason: reasonReset})
	return true, ""
}
