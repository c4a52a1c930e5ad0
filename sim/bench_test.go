package sim

import (
	"sync"
	"testing"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/skills"
)

// standingRobot returns a robot settled on its four feet, and the drive that holds it there.
func standingRobot(b *testing.B, substeps int) (*Robot, *[NumMotors]board.MotorDrive) {
	r := newRobot(b, Config{Substeps: substeps})
	tg := jointTarget{Q: StandingPose(), Tau: standingFeedforward(b, r), Kp: testKp, Kd: testKd}
	hold(b, r, tg, 500, nil)
	if n := r.World().NumContacts(); n != 4 {
		b.Fatalf("%d contacts, want the four feet", n)
	}
	drive := new([NumMotors]board.MotorDrive)
	jointDrive(&tg, drive)
	return r, drive
}

// BenchmarkStep is one 1 ms control period (PD on 12 motors, one 1 ms physics step, sensors)
// with the four feet in contact.
func BenchmarkStep(b *testing.B) {
	r, drive := standingRobot(b, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := r.Step(drive); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkStep10Substeps is one control period with the cards' PD at 10 kHz (10 x 0.1 ms).
func BenchmarkStep10Substeps(b *testing.B) {
	r, drive := standingRobot(b, 10)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := r.Step(drive); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "periods/s")
}

// BenchmarkStepTwoWorlds steps two robots on two goroutines, b.N periods each; steps/s counts
// both.
func BenchmarkStepTwoWorlds(b *testing.B) {
	var robots [2]*Robot
	var drives [2]*[NumMotors]board.MotorDrive
	for i := range robots {
		robots[i], drives[i] = standingRobot(b, 1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range robots {
		wg.Go(func() {
			for range b.N {
				if err := robots[i].Step(drives[i]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(2*b.N)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkSensors reads everything a board and perception stream report in one period.
func BenchmarkSensors(b *testing.B) {
	r, _ := standingRobot(b, 1)
	var motors [NumMotors]board.MotorReading
	var imu proto.IMU
	var hm [skills.HeightMapPoints]float64
	b.ReportAllocs()
	for b.Loop() {
		r.ReadMotors(&motors)
		r.ReadIMU(&imu)
		_ = r.Mocap()
		r.HeightMap(&hm)
	}
}
