package sim

import (
	"bytes"
	"image/png"
	"testing"

	"github.com/dualforce/dualforce/sim/worlds"
)

// A robot placed in a shipped obstacle world stands at the start; its base path over an episode
// plots over the layout.
func TestEpisodeInObstacleWorld(t *testing.T) {
	s, err := worlds.Builtin("obstacle_fenced")
	if err != nil {
		t.Fatal(err)
	}
	l := s.Layout(11)
	r := newRobot(t, Config{Layout: l})
	tg := jointTarget{Q: StandingPose(), Tau: standingFeedforward(t, r), Kp: testKp, Kd: testKd}
	var path []worlds.Point2
	hold(t, r, tg, 1000, func(k int) {
		if k%20 == 0 {
			m := r.Mocap()
			path = append(path, worlds.Point2{m.Pos[0], m.Pos[1]})
		}
	})
	if touch := r.FootContacts(); touch != [4]bool{true, true, true, true} {
		t.Fatalf("not standing in the obstacle world: feet %v", touch)
	}
	img, err := worlds.EncodeTopDownPNG(l, path, "standing at the start")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(img)); err != nil {
		t.Fatalf("episode plot is not a PNG: %v", err)
	}
}
