package doi

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/nn"
)

// classifier is q(z | phi(s)): an MLP from the features to n logits, softmax outside.
type classifier struct {
	net  *nn.MLP[float32]
	opt  *nn.Adam[float32]
	tape nn.Tape[float32]
	dOut []float32
}

func newClassifier(rng *rand.Rand, features, skills int, hidden []int, lr float64) (*classifier, error) {
	net, err := nn.NewMLP[float32](rng, append(append([]int{features}, hidden...), skills), nn.ReLU, nn.Identity)
	if err != nil {
		return nil, err
	}
	return &classifier{net: net, opt: nn.NewAdam[float32](len(net.Params()), lr)}, nil
}

// probs writes softmax(logits) of rows feature rows x into out (rows x n).
func (c *classifier) probs(x []float32, rows int, out []float64) {
	n := c.net.OutDim()
	logits := c.net.Forward(&c.tape, x, rows)
	for r := range rows {
		nn.Softmax(logits[r*n:(r+1)*n], out[r*n:(r+1)*n])
	}
}

// step takes one Adam step on the cross-entropy of labels given the feature rows x, and
// returns the batch loss -(1/B) sum_b log q(label_b | x_b).
func (c *classifier) step(x []float32, labels []int) float64 {
	rows, n := len(labels), c.net.OutDim()
	c.net.ZeroGrad()
	logits := c.net.Forward(&c.tape, x, rows)
	if len(c.dOut) < rows*n {
		c.dOut = make([]float32, rows*n)
	}
	loss := crossEntropy(logits, labels, n, c.dOut[:rows*n])
	c.net.Backward(&c.tape, c.dOut[:rows*n], nil)
	c.opt.Step(c.net.Params(), c.net.Grads())
	return loss
}

// crossEntropy returns -(1/B) sum_b log softmax(logits_b)[label_b] for B rows of n logits,
// and writes its gradient with respect to the logits into grad: (softmax - onehot) / B.
func crossEntropy[T nn.Float](logits []T, labels []int, n int, grad []T) float64 {
	rows := float64(len(labels))
	p := make([]float64, n)
	loss := 0.0
	for r, z := range labels {
		nn.Softmax(logits[r*n:(r+1)*n], p)
		loss -= math.Log(max(p[z], probFloor)) / rows
		for k := range n {
			g := p[k]
			if k == z {
				g--
			}
			grad[r*n+k] = T(g / rows)
		}
	}
	return loss
}

// probFloor keeps log q finite.
const probFloor = 1e-12

// entropy is -sum p log p of a distribution (nats).
func entropy(p []float64) float64 {
	h := 0.0
	for _, x := range p {
		if x > 0 {
			h -= x * math.Log(x)
		}
	}
	return h
}

// state returns copies of the classifier's parameters and optimiser state.
func (c *classifier) state() ([]float32, nn.AdamState[float32]) {
	return slices.Clone(c.net.Params()), c.opt.State()
}

// restore replaces the parameters and optimiser state with copies of params and adam, which
// must be of the classifier's sizes and finite. On error the classifier is unchanged.
func (c *classifier) restore(params []float32, adam nn.AdamState[float32]) error {
	if len(params) != len(c.net.Params()) {
		return fmt.Errorf("%w: %d classifier parameters, the network has %d", nn.ErrShape, len(params), len(c.net.Params()))
	}
	for _, x := range [][]float32{params, adam.M, adam.V} {
		if err := dataset.CheckFinite("classifier", x, 1); err != nil {
			return err
		}
	}
	if err := c.opt.Restore(adam); err != nil {
		return err
	}
	copy(c.net.Params(), params)
	return nil
}
