package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Conditioned is an MLP on [x ; z] whose latent z stays fixed over many
// passes (one skill's latent for an iteration). Its first layer's latent
// columns Wz are kept apart and SetLatent folds Wz z into that layer's bias,
// as skills.Policy does at deployment: Net runs on x alone, so a pass over
// the whole offline set reads the observations where they lie and copies
// nothing. The true bias b0 and Wz are parameters; Step keeps them apart
// from the folded bias while the optimisers run.
//
// With latent dimension 0 it is the plain MLP, initialised and updated
// exactly as one.
type Conditioned[T Float] struct {
	// Net runs on x; while a latent is set, Layers[0].B holds b0 + Wz z.
	Net *MLP[T]
	// Latent is the width of z.
	Latent  int
	wz, gwz []T // Layers[0].Out x Latent
	b0      []T
	z       []T
	wzOpt   *Adam[T]
}

// NewConditioned builds the network [x ; z] -> sizes[1] -> ... with sizes[0]
// the width of x and latent the width of z, initialised as NewMLP would
// initialise the network on sizes[0]+latent inputs.
func NewConditioned[T Float](rng *rand.Rand, sizes []int, latent int, hidden, output Activation) (*Conditioned[T], error) {
	if latent < 0 || len(sizes) < 2 {
		return nil, fmt.Errorf("%w: latent width %d, sizes %v", ErrShape, latent, sizes)
	}
	c := &Conditioned[T]{Latent: latent}
	if latent == 0 {
		net, err := NewMLP[T](rng, sizes, hidden, output)
		if err != nil {
			return nil, err
		}
		c.Net = net
		return c, nil
	}
	full, err := NewMLP[T](rng, append([]int{sizes[0] + latent}, sizes[1:]...), hidden, output)
	if err != nil {
		return nil, err
	}
	// The x-only network's own initial values are overwritten below.
	net, err := NewMLP[T](rand.New(rand.NewPCG(0, 0)), sizes, hidden, output)
	if err != nil {
		return nil, err
	}
	f0, n0 := &full.Layers[0], &net.Layers[0]
	copy(net.params[len(n0.W)+len(n0.B):], full.params[len(f0.W)+len(f0.B):])
	c.wz, c.gwz = make([]T, n0.Out*latent), make([]T, n0.Out*latent)
	for r := range n0.Out {
		copy(n0.W[r*n0.In:(r+1)*n0.In], f0.W[r*f0.In:r*f0.In+n0.In])
		copy(c.wz[r*latent:(r+1)*latent], f0.W[r*f0.In+n0.In:(r+1)*f0.In])
	}
	copy(n0.B, f0.B)
	c.Net, c.b0, c.z = net, append([]T(nil), f0.B...), make([]T, latent)
	return c, nil
}

// SetLatent fixes z (len Latent) for the passes that follow.
func (c *Conditioned[T]) SetLatent(z []T) error {
	if len(z) != c.Latent {
		return fmt.Errorf("%w: latent of %d values, the network takes %d", ErrShape, len(z), c.Latent)
	}
	if c.Latent > 0 {
		copy(c.z, z)
		c.fold()
	}
	return nil
}

// fold writes b0 + Wz z into the first layer's bias.
func (c *Conditioned[T]) fold() {
	b := c.Net.Layers[0].B
	for r := range b {
		s := c.b0[r]
		for k, zk := range c.z {
			s += c.wz[r*c.Latent+k] * zk
		}
		b[r] = s
	}
}

// NewOptimiser returns Adam for the network's parameters; Step uses it (and
// one of its own for Wz, with the same learning rate).
func (c *Conditioned[T]) NewOptimiser(lr float64) *Adam[T] {
	if c.Latent > 0 {
		c.wzOpt = NewAdam[T](len(c.wz), lr)
	}
	return NewAdam[T](len(c.Net.params), lr)
}

// Step applies opt to the gradients Backward accumulated: the first layer's
// bias gradient is b0's, and z times it is Wz's.
func (c *Conditioned[T]) Step(opt *Adam[T]) {
	if c.Latent == 0 {
		opt.Step(c.Net.params, c.Net.grads)
		return
	}
	l0 := &c.Net.Layers[0]
	for r, g := range l0.GB {
		for k, zk := range c.z {
			c.gwz[r*c.Latent+k] = g * zk
		}
	}
	copy(l0.B, c.b0)
	opt.Step(c.Net.params, c.Net.grads)
	c.wzOpt.Step(c.wz, c.gwz)
	copy(c.b0, l0.B)
	c.fold()
}

// Params returns a copy of the parameters: the network's slab with b0 as
// the first layer's bias, then Wz.
func (c *Conditioned[T]) Params() []T { return c.AppendParams(nil) }

// AppendParams appends Params to dst: a learner that reads them every step
// reuses its buffer.
func (c *Conditioned[T]) AppendParams(dst []T) []T {
	start := len(dst)
	p := append(append(dst, c.Net.params...), c.wz...)
	if c.Latent > 0 {
		l0 := &c.Net.Layers[0]
		off := start + len(l0.W)
		copy(p[off:off+len(l0.B)], c.b0)
	}
	return p
}

// NumParams is len(Params()).
func (c *Conditioned[T]) NumParams() int { return len(c.Net.params) + len(c.wz) }

// SetParams loads parameters laid out as Params returns them; the latent
// set before stays set.
func (c *Conditioned[T]) SetParams(p []T) error {
	if len(p) != c.NumParams() {
		return fmt.Errorf("%w: %d parameters, the network has %d", ErrShape, len(p), c.NumParams())
	}
	n := len(c.Net.params)
	copy(c.Net.params, p[:n])
	if c.Latent > 0 {
		copy(c.wz, p[n:])
		l0 := &c.Net.Layers[0]
		copy(c.b0, l0.B)
		c.fold()
	}
	return nil
}

// LatentAdam returns the optimiser state of Wz (empty without a latent).
func (c *Conditioned[T]) LatentAdam() AdamState[T] {
	if c.wzOpt == nil {
		return AdamState[T]{}
	}
	return c.wzOpt.State()
}

// RestoreLatentAdam restores the optimiser state of Wz.
func (c *Conditioned[T]) RestoreLatentAdam(s AdamState[T]) error {
	if c.wzOpt == nil {
		if len(s.M) != 0 || len(s.V) != 0 {
			return fmt.Errorf("%w: latent Adam state for a network without a latent", ErrShape)
		}
		return nil
	}
	return c.wzOpt.Restore(s)
}

// FirstLayer returns the first layer's weights over [x ; z] (Out x
// (In+width) row-major, the latent columns zero past Latent) and its bias b0:
// the layer a bank stores for a latent of the given width (at least Latent).
func (c *Conditioned[T]) FirstLayer(width int) (w, b []T) {
	l0 := &c.Net.Layers[0]
	in := l0.In + width
	w = make([]T, l0.Out*in)
	for r := range l0.Out {
		copy(w[r*in:], l0.W[r*l0.In:(r+1)*l0.In])
		if c.Latent > 0 {
			copy(w[r*in+l0.In:], c.wz[r*c.Latent:(r+1)*c.Latent])
		}
	}
	b = append([]T(nil), l0.B...)
	if c.Latent > 0 {
		copy(b, c.b0)
	}
	return w, b
}

// Restore loads parameters (laid out as Params returns them) and the
// optimiser states of opt and of the latent columns, after checking every
// size and that every value is finite; on error nothing changes.
func (c *Conditioned[T]) Restore(opt *Adam[T], params []T, adam, latentAdam AdamState[T]) error {
	n, nz := len(c.Net.params), len(c.wz)
	if len(params) != n+nz || len(adam.M) != n || len(adam.V) != n || adam.Steps < 0 ||
		len(latentAdam.M) != nz || len(latentAdam.V) != nz || latentAdam.Steps < 0 {
		return fmt.Errorf("%w: %d parameters (Adam %d, latent Adam %d); the network has %d and %d latent",
			ErrShape, len(params), len(adam.M), len(latentAdam.M), n, nz)
	}
	for _, x := range [][]T{params, adam.M, adam.V, latentAdam.M, latentAdam.V} {
		for i, v := range x {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("%w: non-finite value %v at %d", ErrShape, v, i)
			}
		}
	}
	// Sizes are checked above, so neither optimiser can refuse its state.
	if err := opt.Restore(adam); err != nil {
		return err
	}
	if err := c.RestoreLatentAdam(latentAdam); err != nil {
		return err
	}
	return c.SetParams(params)
}
