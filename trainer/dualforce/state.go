package dualforce

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dualforce/dualforce/trainer/dataset"
)

// State is everything the loop itself changes: the iteration count, the
// multipliers, every skill's Polyak-averaged weights and the stored
// latents. The skills' learners and encoders keep their own state; a run
// checkpoints both, and a Loop built by New with the same inputs and learners
// in their saved states continues, after Restore, exactly as the saved one.
type State struct {
	Iteration int
	Mu        []float64
	Weights   [][]float64
	Latents   []Latent
}

// ErrState reports a State that does not fit the loop.
var ErrState = errors.New("dualforce: state does not fit this loop")

// State returns a copy of the loop's state.
func (l *Loop) State() State {
	s := State{Iteration: l.k, Mu: slices.Clone(l.mu), Latents: cloneLatents(l.latents)}
	for _, p := range l.w {
		s.Weights = append(s.Weights, slices.Clone(p.w))
	}
	return s
}

func cloneLatents(src []Latent) []Latent {
	dst := make([]Latent, len(src))
	for i, lat := range src {
		dst[i] = lat
		dst[i].Psi, dst[i].Z = slices.Clone(lat.Psi), slices.Clone(lat.Z)
	}
	return dst
}

// Restore replaces the loop's state with a copy of s after checking it
// (sizes, multipliers within bounds, weights that are distributions,
// latents of this loop's skills and iterations, every value finite). On
// error the loop is unchanged.
func (l *Loop) Restore(s State) error {
	ns := len(l.skills)
	if s.Iteration < 0 || len(s.Mu) != ns || len(s.Weights) != ns || len(s.Latents) != ns*s.Iteration {
		return fmt.Errorf("%w: iteration %d, %d multipliers, %d weight vectors, %d latents for %d skills",
			ErrState, s.Iteration, len(s.Mu), len(s.Weights), len(s.Latents), ns)
	}
	for i, mu := range s.Mu {
		if !(mu >= -MuBound && mu <= MuBound) {
			return fmt.Errorf("%w: mu_%d = %v", ErrState, i, mu)
		}
	}
	for i, w := range s.Weights {
		if err := checkDistribution(w, l.n); err != nil {
			return fmt.Errorf("%w: skill %d's weights: %w", ErrState, i, err)
		}
	}
	for k, lat := range s.Latents {
		if lat.Skill != k%ns || lat.Iteration != k/ns+1 || !(lat.Sigma >= 0 && lat.Sigma <= 1) ||
			math.IsNaN(lat.Constraint) || math.IsInf(lat.Constraint, 0) || len(lat.Psi) != l.in.PhiDim {
			return fmt.Errorf("%w: latent %d (skill %d, iteration %d, sigma %v, phi %v, %d features)",
				ErrState, k, lat.Skill, lat.Iteration, lat.Sigma, lat.Constraint, len(lat.Psi))
		}
		if err := dataset.CheckFinite("latent psi", lat.Psi, 1); err != nil {
			return fmt.Errorf("%w: latent %d: %w", ErrState, k, err)
		}
		if err := dataset.CheckFinite("latent z", lat.Z, 1); err != nil {
			return fmt.Errorf("%w: latent %d: %w", ErrState, k, err)
		}
	}
	l.k, l.mu, l.latents = s.Iteration, slices.Clone(s.Mu), cloneLatents(s.Latents)
	for i, w := range s.Weights {
		l.w[i].k, l.w[i].w = s.Iteration, slices.Clone(w)
	}
	return nil
}
