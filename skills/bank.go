package skills

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
)

// FormatVersion is the bank format this package writes. It reads this one
// and every earlier one (see bankio.go).
const FormatVersion = 2

// HeadLayout and MixtureHeadLayout name the policy head conventions (see
// Policy) of a single Gaussian and of a mixture; the manifest records one so
// a reader can refuse a bank whose networks mean something else.
const (
	HeadLayout        = "mean,log_std"
	MixtureHeadLayout = "mixture:mean,log_std,logit"
)

// Bank is a trained skill bank: one policy network per skill slot (skill
// index i of Dual-Force), every stored latent z_i^k with its metadata, and the
// Contract that says how to feed and drive the networks.
type Bank struct {
	Producer  string // free text: which program and version wrote the bank
	Contract  Contract
	LatentDim int
	// Components is the number of mixture components of every slot's policy
	// head (see Policy): 0 and 1 both mean a single Gaussian, and a bank of
	// single Gaussians reads back with 0. JSON leaves out 0, so a single
	// Gaussian's bank marshals as it did before mixtures existed.
	Components int `json:",omitempty"`
	Slots      []Slot
	Latents    []Latent
	FRE        *FRE // optional: the frozen reward encoder, to encode a new reward on the robot
}

// Slot is skill i's latent-conditioned policy pi_i(a | s, z); see Policy for
// the network contract.
type Slot struct {
	Policy MLP
}

// Latent is one recallable skill: slot Info.Skill run with latent Z.
type Latent struct {
	Info LatentInfo
	Z    []float32
}

// LatentInfo is the metadata of a stored latent z_i^k.
type LatentInfo struct {
	Skill        int       `json:"skill"`                   // slot index i
	Iteration    int       `json:"iteration"`               // outer iteration k
	Name         string    `json:"name,omitempty"`          // human label, e.g. "scripted-trot fit"; unique when set
	SigmoidMu    float64   `json:"sigmoid_mu"`              // sigmoid(mu_i) at iteration k
	Phi          float64   `json:"phi"`                     // constraint estimate phi_i (nats)
	OfflinePsi   []float32 `json:"offline_psi"`             // successor features on the offline data (feature dim)
	OnlineReturn *float64  `json:"online_return,omitempty"` // mean return under the withheld task reward
	OnlinePsi    []float32 `json:"online_psi,omitempty"`    // successor features measured in rollouts
	PassedFilter *bool     `json:"passed_filter,omitempty"` // >= 50% of the SMODICE-expert's return
	Tags         []string  `json:"tags,omitempty"`          // free form: "left", "high", ...
	// GoalRate is the fraction of evaluation rollouts that reached the goal, by the name of the
	// evaluation world they ran in (a world absent: not measured there). Format v2 only: the
	// rates live in one array per world (bankio.go), not in a v1 manifest's items.
	GoalRate map[string]float32 `json:"-"`
}

// FRE is what a bank carries to encode a NEW reward on the robot, zero-shot:
// the frozen encoder the bank's latents came from, and a fixed set of anchor
// states from the offline data D_O, standardised with the bank's normaliser
// (the states the encoder reads). A reward is evaluated on every anchor and
// encoded over the anchors split into Subsets consecutive subsets (Plan);
// Bank.NewAnchorEncoder does both. Each subset costs one encode, so the
// number of subsets sets the price of a new reward on the robot.
type FRE struct {
	Net     FRENet
	Anchors Array // [n, observation dim]
	Subsets int   // m, dividing n; each subset holds n/m anchors
}

// FREAnchors is the name under which a bank stores FRE.Anchors.
const FREAnchors = "fre/anchors"

// Plan splits the anchors into the FRE's subsets.
func (f *FRE) Plan() (SubsetPlan, error) {
	if len(f.Anchors.Shape) != 2 {
		return SubsetPlan{}, fmt.Errorf("%w: anchors of shape %v, want [n, state dim]", ErrBadFRE, f.Anchors.Shape)
	}
	p, err := BlockPlan(f.Anchors.Shape[0], f.Subsets)
	if err != nil {
		return SubsetPlan{}, fmt.Errorf("%w: anchors: %w", ErrBadFRE, err)
	}
	return p, nil
}

// NewEncoder prepares an encoder for the anchors' subsets, and their plan.
func (f *FRE) NewEncoder() (*Encoder, SubsetPlan, error) {
	p, err := f.Plan()
	if err != nil {
		return nil, SubsetPlan{}, err
	}
	e, err := NewEncoder(&f.Net, p.T)
	if err != nil {
		return nil, SubsetPlan{}, err
	}
	return e, p, nil
}

// Array is a float32 array in row-major order.
type Array struct {
	Shape []int
	Data  []float32
}

// Bank size bounds that apply to writing and reading alike.
const (
	maxSlots     = 256
	maxLayers    = 16
	maxLatents   = 1 << 20 // the byte limits (Limits) bind first at any realistic latent size
	maxTagLen    = 256
	maxArrayRank = 2
	maxWorlds    = 64 // evaluation worlds with goal rates in one bank
)

// World names (the keys of LatentInfo.GoalRate) are 1..maxWorldName bytes of
// [A-Za-z0-9_-], so that each names its array in the bank file unambiguously.
var worldNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

const maxWorldName = 64

// ErrWorldName reports a world name a bank cannot store goal rates under.
var ErrWorldName = errors.New("skills: bad evaluation world name")

// CheckWorldName returns nil if a bank can store goal rates measured in the
// world of this name, and an error wrapping ErrWorldName otherwise.
func CheckWorldName(name string) error {
	if len(name) > maxWorldName || !worldNameRE.MatchString(name) {
		return fmt.Errorf("%w: %q: want 1..%d bytes of letters, digits, '_' and '-'", ErrWorldName, name, maxWorldName)
	}
	return nil
}

// Array names are one or more '/'-separated segments of [A-Za-z0-9_.-], none
// starting with '.', at most maxArrayName bytes: safe as zip member names.
var arrayNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*$`)

const maxArrayName = 128

func validArrayName(name string) bool {
	return len(name) <= maxArrayName && arrayNameRE.MatchString(name)
}

// Validate checks the bank as a whole: the contract, that its layout is one
// the runtime can feed, every slot network against the policy contract with
// the bank's mixture components, and every latent's metadata.
func (b *Bank) Validate() error {
	if err := b.Contract.Validate(); err != nil {
		return err
	}
	if err := b.Contract.CheckFeedable(); err != nil {
		return err
	}
	if b.LatentDim < 1 || b.LatentDim > maxLayerWidth {
		return fmt.Errorf("latent dim %d outside 1..%d", b.LatentDim, maxLayerWidth)
	}
	if len(b.Slots) == 0 || len(b.Slots) > maxSlots {
		return fmt.Errorf("%d skill slots, want 1..%d", len(b.Slots), maxSlots)
	}
	if b.Components < 0 || b.Components > MaxComponents {
		return fmt.Errorf("policy heads of %d mixture components, want 0..%d", b.Components, MaxComponents)
	}
	obsDim := b.Contract.Layout.Dim()
	for i := range b.Slots {
		net := &b.Slots[i].Policy
		if len(net.Layers) > maxLayers {
			return fmt.Errorf("slot %d has %d layers, at most %d", i, len(net.Layers), maxLayers)
		}
		if err := CheckPolicyNet(net, obsDim, b.LatentDim, NumJoints, b.Components); err != nil {
			return fmt.Errorf("slot %d: %w", i, err)
		}
	}
	if len(b.Latents) == 0 || len(b.Latents) > maxLatents {
		return fmt.Errorf("%d latents, want 1..%d", len(b.Latents), maxLatents)
	}
	featDim := b.Contract.Features.Dim(b.Contract.Layout)
	names := make(map[string]int)
	if w := b.goalRateWorlds(); len(w) > maxWorlds {
		return fmt.Errorf("goal rates in %d evaluation worlds, at most %d", len(w), maxWorlds)
	}
	for i := range b.Latents {
		if err := b.Latents[i].validate(len(b.Slots), b.LatentDim, featDim); err != nil {
			return fmt.Errorf("latent %d: %w", i, err)
		}
		if n := b.Latents[i].Info.Name; n != "" {
			if j, dup := names[n]; dup {
				return fmt.Errorf("latents %d and %d are both named %q", j, i, n)
			}
			names[n] = i
		}
	}
	if b.FRE != nil {
		if err := b.FRE.validate(b.Contract.Layout, b.LatentDim); err != nil {
			return fmt.Errorf("fre: %w", err)
		}
	}
	return nil
}

func (l *Latent) validate(slots, latentDim, featDim int) error {
	in := &l.Info
	switch {
	case in.Skill < 0 || in.Skill >= slots:
		return fmt.Errorf("skill index %d, bank has %d slots", in.Skill, slots)
	case in.Iteration < 0 || in.Iteration > math.MaxInt32:
		return fmt.Errorf("iteration %d outside 0..%d", in.Iteration, math.MaxInt32)
	case len(l.Z) != latentDim:
		return fmt.Errorf("z has %d values, want %d", len(l.Z), latentDim)
	case !allFinite(l.Z):
		return errors.New("z has NaN or Inf")
	case !(in.SigmoidMu >= 0 && in.SigmoidMu <= 1):
		return fmt.Errorf("sigmoid_mu %v outside [0,1]", in.SigmoidMu)
	case math.IsNaN(in.Phi) || math.IsInf(in.Phi, 0):
		return fmt.Errorf("phi %v is not finite", in.Phi)
	case len(in.OfflinePsi) != featDim || !allFinite(in.OfflinePsi):
		return fmt.Errorf("offline_psi has %d values, want %d finite ones", len(in.OfflinePsi), featDim)
	case in.OnlinePsi != nil && (len(in.OnlinePsi) != featDim || !allFinite(in.OnlinePsi)):
		return fmt.Errorf("online_psi has %d values, want %d finite ones", len(in.OnlinePsi), featDim)
	case in.OnlineReturn != nil && (math.IsNaN(*in.OnlineReturn) || math.IsInf(*in.OnlineReturn, 0)):
		return fmt.Errorf("online_return %v is not finite", *in.OnlineReturn)
	case len(in.Name) > maxTagLen:
		return fmt.Errorf("name is %d bytes long, at most %d", len(in.Name), maxTagLen)
	}
	for _, t := range in.Tags {
		if t == "" || len(t) > maxTagLen || strings.TrimSpace(t) != t {
			return fmt.Errorf("tag %q: want 1..%d bytes without surrounding space", t, maxTagLen)
		}
	}
	for _, w := range slices.Sorted(maps.Keys(in.GoalRate)) {
		if err := CheckWorldName(w); err != nil {
			return fmt.Errorf("goal rate: %w", err)
		}
		if r := in.GoalRate[w]; !(r >= 0 && r <= 1) {
			return fmt.Errorf("goal rate %v in %s outside [0,1]", r, w)
		}
	}
	return nil
}

// AfterSwitchSuffix ends the name under which a latent's goal rate after a switch is kept:
// the share of the runs that reached the goal among those in which the runtime, finding the
// running skill's way blocked, switched to this latent. Its prefix is the evaluation world
// matching what was blocked (the world the switcher ranks candidates by). A rate measured
// from the episode's start says how a skill does from where the robot starts; the runtime
// switches beside a fence, mid-stride, in front of the box, where it may do quite otherwise.
const AfterSwitchSuffix = "_after_switch"

// AfterSwitchWorld names the goal rates after a switch made because of what blocks in world.
func AfterSwitchWorld(world string) string { return world + AfterSwitchSuffix }

// IsAfterSwitch reports that goal rates kept under name were measured after a switch.
func IsAfterSwitch(name string) bool { return strings.HasSuffix(name, AfterSwitchSuffix) }

// goalRateWorlds lists, sorted, every world some latent has a goal rate in.
func (b *Bank) goalRateWorlds() []string {
	seen := make(map[string]bool)
	for i := range b.Latents {
		for w := range b.Latents[i].Info.GoalRate {
			seen[w] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// validate checks the encoder, that it reads states of layout l and writes
// latents of latentDim values, and the anchors and their subsets.
func (f *FRE) validate(l Layout, latentDim int) error {
	d, err := f.Net.Dims()
	if err != nil {
		return err
	}
	if d.State != l.Dim() {
		return fmt.Errorf("%w: the encoder reads %d-value states, layout %q has %d: an encoder for another layout", ErrBadFRE, d.State, l.Name, l.Dim())
	}
	if d.Latent != latentDim {
		return fmt.Errorf("%w: the encoder writes %d-value latents, the bank's latents have %d", ErrBadFRE, d.Latent, latentDim)
	}
	a := f.Anchors
	switch {
	case len(a.Shape) != 2 || a.Shape[1] != d.State || a.Shape[0] < 1:
		return fmt.Errorf("%w: anchors of shape %v, want [n, %d]", ErrBadFRE, a.Shape, d.State)
	case len(a.Data) != numElements(a.Shape):
		return fmt.Errorf("%w: anchors have %d values for shape %v", ErrBadFRE, len(a.Data), a.Shape)
	case !allFinite(a.Data):
		return fmt.Errorf("%w: anchors have NaN or Inf", ErrBadFRE)
	}
	p, err := f.Plan()
	if err != nil {
		return err
	}
	if p.T > maxFRESet {
		return fmt.Errorf("%w: subsets of %d anchors, at most %d", ErrBadFRE, p.T, maxFRESet)
	}
	return nil
}

// maxArrayElements bounds one array (64 MiB of float32).
const maxArrayElements = 1 << 24

func checkShape(shape []int) error {
	if len(shape) == 0 || len(shape) > maxArrayRank {
		return fmt.Errorf("rank %d, want 1..%d", len(shape), maxArrayRank)
	}
	n := 1
	for _, d := range shape {
		if d < 1 || d > maxArrayElements || n > maxArrayElements/d {
			return fmt.Errorf("shape %v: dims must be positive and hold at most %d elements", shape, maxArrayElements)
		}
		n *= d
	}
	return nil
}

func numElements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
