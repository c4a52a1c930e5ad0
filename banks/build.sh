#!/usr/bin/env bash
# Rebuilds one shipped skill bank from scratch: banks/<task>.npz, the Dual-Force bank `make run`
# runs. Called by `make banks` (after `make build`); every step is a dualforce command a user
# can run by hand:
#
#   1. collect     the task's data (the scripted behaviours in MuJoCo, run by the runtime core
#                  in lockstep): locomotion at test scale, navigation at small scale
#   2. smodice     the SMODICE-expert: its discriminator gives r_E, its bank is eval's baseline
#   3. fre         the functional reward encoder, pre-trained and frozen (small sizes, below)
#   4. dualforce   three diverse skills held to the expert, every latent met stored
#   5. eval        every latent of an even subsample run in MuJoCo (with the fenced worlds for
#                  navigation), the results written into the shipped bank so the runtime
#                  starts with, switches to and recalls skills by what they were measured to do
#
# The runs stay in $BANK_WORK/<task> (default out/banks), with their metrics, plots and
# eval.json, and report.html (`dualforce report`). Every step is seeded: a rebuild on the same
# machine gives the same bank (another CPU may round float sums differently).
set -euo pipefail

task=${1:?usage: banks/build.sh locomotion|navigation}
# Per task: the data's scale, Dual-Force's flags and the evaluation's. Navigation needs the small
# set (the test set's six expert episodes are too few to reach the goal from); on its 43,000
# transitions, value and policy networks of 128 units and 1000 iterations keep Dual-Force near
# a quarter of an hour on two cores (the whole-set weight pass of every skill dominates).
# Evaluation: 30 rollouts per latent of an even subsample over skills and iterations (30
# locomotion latents; 12 navigation latents, each in four worlds, with standardised observations
# clamped to +-5: the fences are walls the data never show, and the bank keeps the clip).
case $task in
# The shipped banks' Dual-Force runs predate absorbing falls, judged checkpoints and rehearsal
# by default: --absorbing-falls=false --check-rollouts 0 (the bank is the last iteration's)
# --rehearsal-steps 0.
locomotion) scale=test df_flags=(--absorbing-falls=false --check-rollouts 0 --rehearsal-steps 0) eval_flags=(--max-latents 30) ;;
navigation) scale=small df_flags=(--hidden 128 --iters 1000 --absorbing-falls=false --check-rollouts 0 --rehearsal-steps 0) eval_flags=(--max-latents 12 --fences --obs-clip 5) ;;
*) echo "banks/build.sh: unknown task $task (locomotion or navigation)" >&2; exit 2 ;;
esac
work=${BANK_WORK:-out/banks}/$task
bank=banks/$task.npz
df=bin/dualforce
# One OpenBLAS thread per process: more fight the Go scheduler for the cores.
export OPENBLAS_NUM_THREADS=1

# The shipped banks' FRE, pinned: today's default sizes (the reference's would take days here;
# latents of 32 values keep the bank of every latent met under 5 MB), but the learning rate
# (1e-4, constant), the 3500 steps and the equal family weights it was trained with, not today's
# defaults (1e-3 decaying after 26000 steps, 36000 steps, Dual-Force-form rewards drawn twice as
# often), so that a rebuild makes what ships.
FRE_FLAGS=${FRE_FLAGS:---width 64 --latent 32 --decoder 256 --ffn 128 --batch 128 --lr 0.0001 --lr-half-life 0 --family-weights 1,1,1,1 --steps 3500}

step() { echo "== banks/build.sh $task: $*"; }
rm -rf "$work"
mkdir -p "$work"
step "collect"
$df collect --task "$task" --scale "$scale" --out "$work/data.npz" --quiet
step "train smodice"
# The shipped banks' SMODICE-expert (eval's baseline and filter; FRE and Dual-Force read only
# its discriminator) is built as before SMODICE's defaults judged checkpoints and made falls
# absorbing: the last iteration's, with the spec's terminal value. At this scale it walks.
$df train smodice --offline "$work/data.npz" --out "$work/smodice" --check-rollouts 0 --absorbing-falls=false --quiet
step "train fre ($FRE_FLAGS)"
# shellcheck disable=SC2086 # FRE_FLAGS is a list of flags
$df train fre --offline "$work/data.npz" --smodice "$work/smodice" --out "$work/fre" $FRE_FLAGS --quiet
step "train dualforce"
$df train dualforce --offline "$work/data.npz" --smodice "$work/smodice" --fre "$work/fre" --out "$work/dualforce" "${df_flags[@]}" --quiet
step "eval (${eval_flags[*]}) into $bank"
$df eval --task "$task" --bank "$work/dualforce/bank.npz" --expert "$work/smodice/bank.npz" \
	"${eval_flags[@]}" --out "$work/dualforce/eval" --write-bank "$bank" --quiet
step "report"
$df report --out "$work/report.html" "$work/dualforce"
ls -l "$bank"
