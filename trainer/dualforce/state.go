package dualforce

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/dice"
	"github.com/dualforce/dualforce/trainer/skillset"
)

// State is everything the loop itself changes: the iteration count, the
// multipliers, every skill's Polyak-averaged weights, the stored latents
// and the rehearsal snapshots (every skill's, in skill order). The skills'
// learners and encoders keep their own state; a run checkpoints both, and a
// Loop built by New with the same inputs and learners in their saved states
// continues, after Restore, exactly as the saved one.
type State struct {
	Iteration int
	Mu        []float64
	Weights   [][]float64
	Latents   []Latent
	Snapshots []Snapshot
}

// ErrState reports a State that does not fit the loop.
var ErrState = errors.New("dualforce: state does not fit this loop")

// State returns a copy of the loop's state.
func (l *Loop) State() State {
	s := State{Iteration: l.k, Mu: slices.Clone(l.mu), Latents: cloneLatents(l.latents)}
	for _, p := range l.w {
		s.Weights = append(s.Weights, slices.Clone(p.W))
	}
	for _, snaps := range l.snapshots {
		for _, snap := range snaps {
			snap.Rows = slices.Clone(snap.Rows)
			s.Snapshots = append(s.Snapshots, snap)
		}
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
		if !(mu >= -skillset.MuBound && mu <= skillset.MuBound) {
			return fmt.Errorf("%w: mu_%d = %v", ErrState, i, mu)
		}
	}
	for i, w := range s.Weights {
		if len(w) != l.n {
			return fmt.Errorf("%w: skill %d has %d weights for %d transitions", ErrState, i, len(w), l.n)
		}
		if err := dice.CheckWeights(w); err != nil {
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
	snapshots, err := l.checkSnapshots(s.Iteration, s.Snapshots)
	if err != nil {
		return err
	}
	l.k, l.mu, l.latents, l.snapshots = s.Iteration, slices.Clone(s.Mu), cloneLatents(s.Latents), snapshots
	for i, w := range s.Weights {
		l.w[i].K, l.w[i].W = s.Iteration, slices.Clone(w)
	}
	return nil
}

// checkSnapshots checks that snaps are the rehearsal snapshots this
// loop keeps after iteration k (each skill's multiples of the stride, of
// RehearsalRows rows of the set; none without rehearsal) and returns them
// by skill, copied.
func (l *Loop) checkSnapshots(k int, snaps []Snapshot) ([][]Snapshot, error) {
	ns := len(l.skills)
	bySkill := make([][]Snapshot, ns)
	want := 0
	stride := 1
	if l.cfg.RehearsalSteps > 0 {
		stride = snapshotStride(k, l.cfg.RehearsalKeep)
		want = k / stride
	}
	if len(snaps) != ns*want {
		return nil, fmt.Errorf("%w: %d rehearsal snapshots after iteration %d, want %d", ErrState, len(snaps), k, ns*want)
	}
	for j, snap := range snaps {
		i, it := j/want, (j%want+1)*stride
		if snap.Skill != i || snap.Iteration != it || len(snap.Rows) != l.cfg.RehearsalRows {
			return nil, fmt.Errorf("%w: rehearsal snapshot %d is skill %d's of iteration %d with %d rows, want skill %d's of iteration %d with %d",
				ErrState, j, snap.Skill, snap.Iteration, len(snap.Rows), i, it, l.cfg.RehearsalRows)
		}
		for _, r := range snap.Rows {
			if r < 0 || int(r) >= l.n {
				return nil, fmt.Errorf("%w: rehearsal snapshot %d holds row %d of a set of %d", ErrState, j, r, l.n)
			}
		}
		snap.Rows = slices.Clone(snap.Rows)
		bySkill[i] = append(bySkill[i], snap)
	}
	return bySkill, nil
}

// Names of the arrays a State is stored as (Arrays). Per-skill weights are
// ArrayWeights followed by the skill's index.
const (
	ArrayMu         = "dualforce.mu"
	ArrayWeights    = "dualforce.w."
	ArraySkill      = "latents.skill"
	ArrayIteration  = "latents.iteration"
	ArraySigma      = "latents.sigmoid_mu"
	ArrayConstraint = "latents.phi"
	ArrayPsi        = "latents.offline_psi"
	ArrayZ          = "latents.z"
	// The rehearsal snapshots: their skill and iteration, and their rows
	// one snapshot after the other.
	ArraySnapshotSkill     = "rehearsal.skill"
	ArraySnapshotIteration = "rehearsal.iteration"
	ArraySnapshotRows      = "rehearsal.rows"
)

// Arrays lays the state out as named arrays for a checkpoint: float64
// multipliers, weights and per-latent numbers (integers are exact in
// float64), and float32 psi and z rows of every latent.
func (s State) Arrays() (f32 map[string][]float32, f64 map[string][]float64) {
	f64 = map[string][]float64{ArrayMu: slices.Clone(s.Mu)}
	for i, w := range s.Weights {
		f64[fmt.Sprintf("%s%d", ArrayWeights, i)] = slices.Clone(w)
	}
	f32 = map[string][]float32{ArrayPsi: {}, ArrayZ: {}}
	for _, name := range []string{ArraySkill, ArrayIteration, ArraySigma, ArrayConstraint} {
		f64[name] = make([]float64, 0, len(s.Latents))
	}
	for _, lat := range s.Latents {
		f64[ArraySkill] = append(f64[ArraySkill], float64(lat.Skill))
		f64[ArrayIteration] = append(f64[ArrayIteration], float64(lat.Iteration))
		f64[ArraySigma] = append(f64[ArraySigma], lat.Sigma)
		f64[ArrayConstraint] = append(f64[ArrayConstraint], lat.Constraint)
		f32[ArrayPsi] = append(f32[ArrayPsi], lat.Psi...)
		f32[ArrayZ] = append(f32[ArrayZ], lat.Z...)
	}
	for _, name := range []string{ArraySnapshotSkill, ArraySnapshotIteration, ArraySnapshotRows} {
		f64[name] = []float64{}
	}
	for _, snap := range s.Snapshots {
		f64[ArraySnapshotSkill] = append(f64[ArraySnapshotSkill], float64(snap.Skill))
		f64[ArraySnapshotIteration] = append(f64[ArraySnapshotIteration], float64(snap.Iteration))
		for _, r := range snap.Rows {
			f64[ArraySnapshotRows] = append(f64[ArraySnapshotRows], float64(r))
		}
	}
	return f32, f64
}

// StateFromArrays reads back what Arrays wrote, for a loop of the given
// number of skills, latent width and feature width at the given iteration.
// It checks that every array is there with its size; Restore checks the
// values.
func StateFromArrays(f32 map[string][]float32, f64 map[string][]float64, iteration, skills, latentDim, featureDim int) (State, error) {
	k := iteration * skills
	s := State{Iteration: iteration, Mu: f64[ArrayMu]}
	if len(s.Mu) != skills {
		return State{}, fmt.Errorf("%w: %d multipliers for %d skills", ErrState, len(s.Mu), skills)
	}
	for i := range skills {
		w, ok := f64[fmt.Sprintf("%s%d", ArrayWeights, i)]
		if !ok {
			return State{}, fmt.Errorf("%w: no weights of skill %d", ErrState, i)
		}
		s.Weights = append(s.Weights, w)
	}
	for _, c := range []struct {
		name string
		got  int
		want int
	}{
		{ArraySkill, len(f64[ArraySkill]), k}, {ArrayIteration, len(f64[ArrayIteration]), k},
		{ArraySigma, len(f64[ArraySigma]), k}, {ArrayConstraint, len(f64[ArrayConstraint]), k},
		{ArrayPsi, len(f32[ArrayPsi]), k * featureDim}, {ArrayZ, len(f32[ArrayZ]), k * latentDim},
	} {
		if c.got != c.want {
			return State{}, fmt.Errorf("%w: %s holds %d values, want %d", ErrState, c.name, c.got, c.want)
		}
	}
	psi, z := f32[ArrayPsi], f32[ArrayZ]
	for j := range k {
		s.Latents = append(s.Latents, Latent{
			Skill: int(f64[ArraySkill][j]), Iteration: int(f64[ArrayIteration][j]),
			Sigma: f64[ArraySigma][j], Constraint: f64[ArrayConstraint][j],
			Psi: psi[j*featureDim : (j+1)*featureDim], Z: z[j*latentDim : (j+1)*latentDim],
		})
	}
	// Checkpoints of runs without rehearsal may not have these arrays.
	skill, iter, rows := f64[ArraySnapshotSkill], f64[ArraySnapshotIteration], f64[ArraySnapshotRows]
	if len(iter) != len(skill) || (len(iter) == 0) != (len(rows) == 0) || (len(iter) > 0 && len(rows)%len(iter) != 0) {
		return State{}, fmt.Errorf("%w: %d rehearsal snapshots with %d skills and %d rows", ErrState, len(iter), len(skill), len(rows))
	}
	for j := range iter {
		per := len(rows) / len(iter)
		snap := Snapshot{Skill: exactInt(skill[j]), Iteration: exactInt(iter[j]), Rows: make([]int32, per)}
		for r, x := range rows[j*per : (j+1)*per] {
			snap.Rows[r] = int32(exactInt(x))
		}
		s.Snapshots = append(s.Snapshots, snap)
	}
	return s, nil
}

// exactInt is x as an int when it is one that fits a row index, else -1
// (which no check accepts).
func exactInt(x float64) int {
	if !(x >= 0 && x <= math.MaxInt32) || x != math.Trunc(x) {
		return -1
	}
	return int(x)
}
