package proto

import (
	"encoding/binary"
	"fmt"
	"math"
)

// DriverSensor is one driver's block of a sensor packet, SI units on the motor side.
type DriverSensor struct {
	Status         Status
	Timestamp      uint16
	Position       [MotorsPerDriver]float64 // rad
	Velocity       [MotorsPerDriver]float64 // rad/s; a raw +-1 LSB reads as 0
	Current        [MotorsPerDriver]float64 // A
	CoilResistance [MotorsPerDriver]float64 // Q15 value as reported
	ADC            [MotorsPerDriver]float64 // Q16 value as reported
}

// IMU is the master board's inertial unit as it reports itself, in the IMU frame.
type IMU struct {
	Accelerometer [3]float64 // m/s^2, includes gravity (the wire carries g)
	Gyroscope     [3]float64 // rad/s
	Attitude      [3]float64 // roll, pitch, yaw in rad; yaw is zeroed when the IMU starts
	LinearAcc     [3]float64 // m/s^2 without gravity; only +-16 is representable and the firmware wraps
}

// Power is the power-board block.
type Power struct {
	VBus   float64 // V
	IShunt float64 // A
	Energy float64 // J
}

// Sensor is the board's 208-byte sensor payload.
type Sensor struct {
	SessionID    uint16
	Drivers      [NumDrivers]DriverSensor
	IMU          IMU
	Power        Power
	SensorIndex  uint16 // +1 per packet sent; reset on entering SENDING_INIT_ACK
	PacketLoss   uint16 // cumulative commands lost, from command_index gaps
	LastCmdIndex uint16 // command_index of the last command received
}

// Motor returns position, velocity and current of motor m (driver m/2, port m%2).
func (s *Sensor) Motor(m int) (pos, vel, cur float64) {
	d := &s.Drivers[m/2]
	return d.Position[m%2], d.Velocity[m%2], d.Current[m%2]
}

const (
	imuOffset   = 2 + NumDrivers*driverSensorLen // 170
	powerOffset = imuOffset + 24                 // 194
)

// Unmarshal reads a 208-byte sensor payload.
func (s *Sensor) Unmarshal(src []byte) error {
	if len(src) != SensorLen {
		if len(src) == v3LenSensor {
			return ErrProtocolV3
		}
		return fmt.Errorf("%w: sensor packet is %d bytes, got %d", ErrBufferSize, SensorLen, len(src))
	}
	le := binary.LittleEndian
	s.SessionID = le.Uint16(src[0:])
	for d := range NumDrivers {
		b := src[2+d*driverSensorLen : 2+(d+1)*driverSensorLen]
		ds := &s.Drivers[d]
		ds.Status = Status(le.Uint16(b[0:]))
		ds.Timestamp = le.Uint16(b[2:])
		for p := range MotorsPerDriver {
			ds.Position[p] = fromQ(int64(int32(le.Uint32(b[4+4*p:]))), 24) * radPerTurn
			rawVel := int16(le.Uint16(b[12+2*p:]))
			if rawVel == 1 || rawVel == -1 {
				rawVel = 0 // the encoders dither by one LSB at rest
			}
			ds.Velocity[p] = fromQ(int64(rawVel), 11) * radPerSPerKrpm
			ds.Current[p] = fromQ(int64(int16(le.Uint16(b[16+2*p:]))), 10)
			ds.CoilResistance[p] = fromQ(int64(le.Uint16(b[20+2*p:])), 15)
			ds.ADC[p] = fromQ(int64(le.Uint16(b[24+2*p:])), 16)
		}
	}
	imu := src[imuOffset:]
	for i := range 3 {
		s.IMU.Accelerometer[i] = fromQ(int64(int16(le.Uint16(imu[2*i:]))), 11) * StandardGravity
		s.IMU.Gyroscope[i] = fromQ(int64(int16(le.Uint16(imu[6+2*i:]))), 11)
		s.IMU.Attitude[i] = fromQ(int64(int16(le.Uint16(imu[12+2*i:]))), 13)
		s.IMU.LinearAcc[i] = fromQ(int64(int16(le.Uint16(imu[18+2*i:]))), 11)
	}
	pw := src[powerOffset:]
	s.Power.VBus = float64(le.Uint16(pw[0:])) * vbusScale
	s.Power.IShunt = float64(int16(le.Uint16(pw[2:]))) * ishuntScale
	s.Power.Energy = float64(math.Float32frombits(le.Uint32(pw[4:]))) * energyScale
	s.SensorIndex = le.Uint16(src[202:])
	s.PacketLoss = le.Uint16(src[204:])
	s.LastCmdIndex = le.Uint16(src[206:])
	return nil
}

// Marshal writes the 208-byte sensor payload (the board's side). Values out of the wire's range
// saturate, except the linear acceleration, which wraps as the firmware's does. Non-finite values
// are written as 0, as a sensor that produced garbage would be.
func (s *Sensor) Marshal(dst []byte) error {
	if len(dst) != SensorLen {
		return fmt.Errorf("%w: sensor packet needs %d bytes, got %d", ErrBufferSize, SensorLen, len(dst))
	}
	le := binary.LittleEndian
	le.PutUint16(dst[0:], s.SessionID)
	for d := range NumDrivers {
		b := dst[2+d*driverSensorLen : 2+(d+1)*driverSensorLen]
		ds := &s.Drivers[d]
		le.PutUint16(b[0:], uint16(ds.Status))
		le.PutUint16(b[2:], ds.Timestamp)
		for p := range MotorsPerDriver {
			pos, _ := toQ32(finite(ds.Position[p])/radPerTurn, 24)
			vel, _ := toQ16(finite(ds.Velocity[p])/radPerSPerKrpm, 11)
			cur, _ := toQ16(finite(ds.Current[p]), 10)
			res, _ := toUQ16(finite(ds.CoilResistance[p]), 15)
			adc, _ := toUQ16(finite(ds.ADC[p]), 16)
			le.PutUint32(b[4+4*p:], uint32(pos))
			le.PutUint16(b[12+2*p:], uint16(vel))
			le.PutUint16(b[16+2*p:], uint16(cur))
			le.PutUint16(b[20+2*p:], res)
			le.PutUint16(b[24+2*p:], adc)
		}
	}
	imu := dst[imuOffset:]
	for i := range 3 {
		acc, _ := toQ16(finite(s.IMU.Accelerometer[i])/StandardGravity, 11)
		gyr, _ := toQ16(finite(s.IMU.Gyroscope[i]), 11)
		att, _ := toQ16(finite(s.IMU.Attitude[i]), 13)
		le.PutUint16(imu[2*i:], uint16(acc))
		le.PutUint16(imu[6+2*i:], uint16(gyr))
		le.PutUint16(imu[12+2*i:], uint16(att))
		le.PutUint16(imu[18+2*i:], uint16(wrapQ16(finite(s.IMU.LinearAcc[i]), 11)))
	}
	pw := dst[powerOffset:]
	vbus, _ := toUQ16(finite(s.Power.VBus)/vbusScale, 0)
	ish, _ := toQ16(finite(s.Power.IShunt)/ishuntScale, 0)
	le.PutUint16(pw[0:], vbus)
	le.PutUint16(pw[2:], uint16(ish))
	le.PutUint32(pw[4:], math.Float32bits(float32(finite(s.Power.Energy)/energyScale)))
	le.PutUint16(dst[202:], s.SensorIndex)
	le.PutUint16(dst[204:], s.PacketLoss)
	le.PutUint16(dst[206:], s.LastCmdIndex)
	return nil
}

func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// wrapQ16 converts like the firmware's unchecked cast: the value wraps modulo 2^16.
func wrapQ16(x float64, q uint) int16 {
	v := math.Trunc(x * float64(uint64(1)<<q))
	return int16(int64(math.Mod(v, 65536)))
}
