package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/slider"
	"github.com/dualforce/dualforce/runtime/corebus"
)

func sampleRecord(t testing.TB) []byte {
	t.Helper()
	c := &Core{decim: 1}
	snap := slider.Snapshot{Latched: true}
	p := Perception{Valid: true, Position: [3]float64{1, 2, 3}, Yaw: 0.5}
	p.HeightMap[7] = -0.2
	in := Input{Now: 1234 * time.Millisecond, Fresh: true, Overrun: true, Slider: &snap, Perception: &p}
	out := Output{Applied: []corebus.Command{
		{Kind: corebus.KindSkill, ID: "s", ReplyTo: "r", IssuedAt: time.Unix(5, 6), Lifetime: time.Second,
			Skill: corebus.SkillSelection{By: corebus.SelectByLatent, Latent: []float32{0.5, -1}}},
		{Kind: corebus.KindGoal, Goal: corebus.Goal{X: 1, Y: -2, Yaw: 0.3}, BankPath: "/b.npz"},
		{Kind: corebus.KindRecall, ID: "r", Recall: corebus.Recall{MaxDistance: 0.25, Latent: []float32{0.25, -2}, Generation: 3,
			Reward: []corebus.RewardTerm{{Element: "joint_pos.FL_KFE", Weight: -1}, {Element: "base_lin_vel.x", Weight: 0.5}}}},
	}}
	return c.AppendInputRecord(nil, &in, &out)
}

func TestInputRecordRoundTrip(t *testing.T) {
	var r InputRecord
	if err := DecodeInputRecord(sampleRecord(t), &r); err != nil {
		t.Fatal(err)
	}
	in := r.Input
	if in.Now != 1234*time.Millisecond || !in.Fresh || !in.Overrun || in.Slider == nil || !in.Slider.Latched ||
		in.Perception == nil || in.Perception.Position != [3]float64{1, 2, 3} || in.Perception.HeightMap[7] != -0.2 {
		t.Fatalf("input %+v", in)
	}
	if len(r.Commands) != 3 || r.Commands[0].ID != "s" || r.Commands[0].Skill.Latent[1] != -1 ||
		!r.Commands[0].IssuedAt.Equal(time.Unix(5, 6)) || r.Commands[1].Goal.Y != -2 || r.Commands[1].BankPath != "/b.npz" {
		t.Fatalf("commands %+v", r.Commands)
	}
	if rc := r.Commands[2].Recall; rc.MaxDistance != 0.25 || fmt.Sprint(rc.Reward) != "[{joint_pos.FL_KFE -1} {base_lin_vel.x 0.5}]" ||
		fmt.Sprint(rc.Latent) != "[0.25 -2]" || rc.Generation != 3 {
		t.Fatalf("recall %+v", rc)
	}
}

// Recordings made before recall existed (version 1: no reward, no max_distance) still replay.
func TestInputRecordVersion1(t *testing.T) {
	le := binary.LittleEndian
	rec := []byte{1}
	rec = le.AppendUint64(rec, uint64(2*time.Second))
	rec = append(rec, inFresh, 1) // flags, one command
	rec = append(rec, byte(corebus.KindMode), 1, 0, 'm', 0, 0)
	rec = le.AppendUint64(rec, 0) // issued_at
	rec = le.AppendUint64(rec, 0) // lifetime
	rec = append(rec, 0)          // select_by
	rec = le.AppendUint64(rec, 0) // index
	rec = le.AppendUint64(rec, 0) // generation
	rec = le.AppendUint16(rec, 0) // latent
	rec = append(rec, byte(corebus.ModeRun))
	rec = append(rec, make([]byte, 6*8)...) // velocity and goal
	rec = le.AppendUint16(rec, 0)           // bank path
	var r InputRecord
	if err := DecodeInputRecord(rec, &r); err != nil {
		t.Fatal(err)
	}
	if r.Input.Now != 2*time.Second || len(r.Commands) != 1 || r.Commands[0].ID != "m" || r.Commands[0].Mode != corebus.ModeRun || r.Commands[0].Recall.Reward != nil {
		t.Fatalf("record %+v commands %+v", r.Input, r.Commands)
	}
}

func TestInputRecordMalformed(t *testing.T) {
	good := sampleRecord(t)
	cases := map[string][]byte{
		"empty":         nil,
		"wrong version": append([]byte{9}, good[1:]...),
		"trailing":      append(append([]byte{}, good...), 0),
	}
	for _, n := range []int{1, 5, 9, 10, 40, len(good) - 1} {
		cases[fmt.Sprintf("truncated to %d bytes", n)] = good[:n]
	}
	for name, data := range cases {
		var r InputRecord
		if err := DecodeInputRecord(data, &r); !errors.Is(err, ErrInputRecord) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

func FuzzDecodeInputRecord(f *testing.F) {
	f.Add(sampleRecord(f))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var r InputRecord
		_ = DecodeInputRecord(data, &r)
	})
}

func TestAppendInputRecordDoesNotAllocate(t *testing.T) {
	c := &Core{decim: 1}
	snap := slider.Snapshot{}
	p := Perception{Valid: true}
	in := Input{Fresh: true, Slider: &snap, Perception: &p}
	out := Output{Applied: []corebus.Command{{Kind: corebus.KindMode, ID: "m", Mode: corebus.ModeRun}}}
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { buf = c.AppendInputRecord(buf[:0], &in, &out) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
