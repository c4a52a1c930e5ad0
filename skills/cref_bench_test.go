//go:build cgo

package skills

import (
	"testing"

	"github.com/dualforce/dualforce/skills/internal/cref"
)

func init() {
	mlpBenchmarks = append(mlpBenchmarks, struct {
		name string
		make func(b *testing.B, m MLP) func(x, out []float32)
	}{"C-O3-native-fastmath", crefBench})
}

func crefBench(b *testing.B, m MLP) func(x, out []float32) {
	var layers []cref.Layer
	for _, l := range m.Layers {
		act := cref.ActNone
		switch l.Act {
		case ActReLU:
			act = cref.ActReLU
		case ActTanh:
			act = cref.ActTanh
		case ActNone:
		default:
			b.Fatalf("C reference has no %v", l.Act)
		}
		layers = append(layers, cref.Layer{In: l.In, Out: l.Out, Act: act, W: l.W, B: l.B})
	}
	n, err := cref.New(layers)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(n.Free)
	return func(x, out []float32) {
		if err := n.Forward(x, out); err != nil {
			b.Fatal(err)
		}
	}
}
