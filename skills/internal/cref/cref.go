//go:build cgo

package cref

/*
#cgo CFLAGS: -O3 -march=native -ffast-math
#cgo LDFLAGS: -lm
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { ACT_NONE = 0, ACT_RELU = 1, ACT_TANH = 2 };

typedef struct {
	int in, out, act;
	float *w, *b, *y;
} cref_layer;

typedef struct {
	int n;
	cref_layer *layers;
} cref_net;

static cref_net *cref_new(int n) {
	cref_net *net = calloc(1, sizeof(cref_net));
	net->n = n;
	net->layers = calloc(n, sizeof(cref_layer));
	return net;
}

static void cref_set(cref_net *net, int i, int in, int out, int act, const float *w, const float *b) {
	cref_layer *l = &net->layers[i];
	l->in = in;
	l->out = out;
	l->act = act;
	l->w = malloc(sizeof(float) * (size_t)in * out);
	l->b = malloc(sizeof(float) * (size_t)out);
	l->y = malloc(sizeof(float) * (size_t)out);
	memcpy(l->w, w, sizeof(float) * (size_t)in * out);
	memcpy(l->b, b, sizeof(float) * (size_t)out);
}

static void cref_free(cref_net *net) {
	for (int i = 0; i < net->n; i++) {
		free(net->layers[i].w);
		free(net->layers[i].b);
		free(net->layers[i].y);
	}
	free(net->layers);
	free(net);
}

static void cref_forward(const cref_net *net, const float *x, float *out) {
	const float *in = x;
	for (int i = 0; i < net->n; i++) {
		const cref_layer *l = &net->layers[i];
		float *y = (i == net->n - 1) ? out : l->y;
		for (int r = 0; r < l->out; r++) {
			const float *w = l->w + (size_t)r * l->in;
			float s = l->b[r];
			for (int k = 0; k < l->in; k++) {
				s += w[k] * in[k];
			}
			switch (l->act) {
			case ACT_RELU: s = s > 0 ? s : 0; break;
			case ACT_TANH: s = tanhf(s); break;
			}
			y[r] = s;
		}
		in = y;
	}
}
*/
import "C"

import (
	"errors"
	"runtime"
	"unsafe"
)

// Activations understood by the reference.
const (
	ActNone = C.ACT_NONE
	ActReLU = C.ACT_RELU
	ActTanh = C.ACT_TANH
)

// Layer is one dense layer, W row-major Out x In.
type Layer struct {
	In, Out, Act int
	W, B         []float32
}

// Net owns a C copy of the weights.
type Net struct {
	p        *C.cref_net
	in, out  int
	released bool
}

// New copies layers into C memory.
func New(layers []Layer) (*Net, error) {
	if len(layers) == 0 {
		return nil, errors.New("cref: no layers")
	}
	for i, l := range layers {
		if len(l.W) != l.In*l.Out || len(l.B) != l.Out || (i > 0 && l.In != layers[i-1].Out) {
			return nil, errors.New("cref: inconsistent layer shapes")
		}
	}
	n := &Net{p: C.cref_new(C.int(len(layers))), in: layers[0].In, out: layers[len(layers)-1].Out}
	for i, l := range layers {
		C.cref_set(n.p, C.int(i), C.int(l.In), C.int(l.Out), C.int(l.Act),
			(*C.float)(unsafe.Pointer(&l.W[0])), (*C.float)(unsafe.Pointer(&l.B[0])))
	}
	runtime.SetFinalizer(n, (*Net).Free)
	return n, nil
}

// ErrSize reports vectors that do not match the network.
var ErrSize = errors.New("cref: wrong vector sizes")

// Forward evaluates the network on x into out.
func (n *Net) Forward(x, out []float32) error {
	if len(x) != n.in || len(out) != n.out {
		return ErrSize
	}
	C.cref_forward(n.p, (*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&out[0])))
	return nil
}

// Free releases the C memory.
func (n *Net) Free() {
	if !n.released {
		n.released = true
		C.cref_free(n.p)
	}
}
