package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Init fills a freshly allocated parameter.
type Init func(rng *rand.Rand, w []float64)

// Zeros leaves a parameter at 0.
func Zeros(*rand.Rand, []float64) {}

// Ones sets every entry to 1 (LayerNorm gains).
func Ones(_ *rand.Rand, w []float64) {
	for i := range w {
		w[i] = 1
	}
}

// Uniform draws every entry from U(-bound, bound).
func Uniform(bound float64) Init {
	return func(rng *rand.Rand, w []float64) {
		for i := range w {
			w[i] = bound * (2*rng.Float64() - 1)
		}
	}
}

// XavierUniform is Glorot's uniform initialisation for a fanIn x fanOut
// kernel: U(+-sqrt(6 / (fanIn + fanOut))).
func XavierUniform(fanIn, fanOut int) Init {
	return Uniform(math.Sqrt(6 / float64(fanIn+fanOut)))
}

// Normal draws every entry from N(0, std^2).
func Normal(std float64) Init {
	return func(rng *rand.Rand, w []float64) {
		for i := range w {
			w[i] = std * rng.NormFloat64()
		}
	}
}

// Param is one named tensor of a model: a view into its arena's parameter
// slab (W) and gradient slab (G), valid once the arena is allocated.
type Param[T Float] struct {
	Name  string
	Shape []int
	W, G  []T
	init  Init
}

// Len is the number of entries.
func (p *Param[T]) Len() int {
	n := 1
	for _, s := range p.Shape {
		n *= s
	}
	return n
}

// Arena holds every parameter of a model in one contiguous slab, and every
// gradient in a second slab of the same layout, so that one optimiser, one
// ZeroGrad and one checkpoint array cover the whole model. Layers register
// their parameters with New while the model is built; Alloc then creates
// the slabs and initialises every parameter in registration order.
type Arena[T Float] struct {
	list          []*Param[T]
	params, grads []T
	allocated     bool
}

// New registers a parameter. It panics after Alloc or for an empty shape:
// both are programming errors of a model's constructor.
func (a *Arena[T]) New(name string, init Init, shape ...int) *Param[T] {
	if a.allocated {
		panic("nn: Arena.New after Alloc")
	}
	p := &Param[T]{Name: name, Shape: append([]int(nil), shape...), init: init}
	if p.Len() <= 0 {
		panic(fmt.Sprintf("nn: parameter %q of shape %v", name, shape))
	}
	a.list = append(a.list, p)
	return p
}

// Alloc creates the slabs and initialises the parameters from rng. The
// initial values are drawn in float64, so a float32 and a float64 model
// built from the same seed hold the same numbers up to rounding.
func (a *Arena[T]) Alloc(rng *rand.Rand) {
	if a.allocated {
		panic("nn: Arena.Alloc twice")
	}
	a.allocated = true
	total := 0
	for _, p := range a.list {
		total += p.Len()
	}
	a.params, a.grads = make([]T, total), make([]T, total)
	off := 0
	for _, p := range a.list {
		n := p.Len()
		p.W, p.G = a.params[off:off+n:off+n], a.grads[off:off+n:off+n]
		off += n
		w := make([]float64, n)
		p.init(rng, w)
		for i, v := range w {
			p.W[i] = T(v)
		}
	}
}

// Params is the parameter slab; writing to it changes the model.
func (a *Arena[T]) Params() []T { return a.params }

// Grads is the gradient slab, laid out like Params. Backward passes add to it.
func (a *Arena[T]) Grads() []T { return a.grads }

// ZeroGrad clears every gradient.
func (a *Arena[T]) ZeroGrad() { clear(a.grads) }

// List returns the parameters in slab order.
func (a *Arena[T]) List() []*Param[T] { return a.list }

// Lookup returns the parameter called name.
func (a *Arena[T]) Lookup(name string) (*Param[T], bool) {
	for _, p := range a.list {
		if p.Name == name {
			return p, true
		}
	}
	return nil, false
}
