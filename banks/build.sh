#!/usr/bin/env bash
# Rebuilds one shipped skill bank from scratch: banks/<task>.npz, the Dual-Force bank `make run`
# runs. Called by `make banks` (after `make build`); every step is a dualforce command a user
# can run by hand:
#
#   1. collect     the task's data (the scripted behaviours in MuJoCo, run by the runtime core
#                  in lockstep): locomotion at test scale, navigation at paper scale
#   2. smodice     the SMODICE-expert: its discriminator gives r_E, its bank is eval's baseline
#   3. fre         the functional reward encoder, pre-trained and frozen (per task, below)
#   4. dualforce   three diverse skills held to the expert, every latent met stored
#   5. eval        every latent of an even subsample run in MuJoCo (with the fenced worlds for
#                  navigation, and each latent's goal rate after the runtime switches to it:
#                  --after-switch), the results written into the shipped bank so the runtime
#                  starts with, switches to and recalls skills by what they were measured to do
#
# The runs stay in $BANK_WORK/<task> (default out/banks), with their metrics, plots and
# eval.json, and report.html (`dualforce report`). Every step is seeded: a rebuild on the same
# machine gives the same bank (another CPU may round float sums differently).
set -euo pipefail

task=${1:?usage: banks/build.sh locomotion|navigation}
# Per task: the data's scale and the flags of each step.
#
# Locomotion: the test-scale set. Its SMODICE-expert, FRE and Dual-Force runs predate today's
# defaults and are pinned to what they were built with, so that a rebuild makes what ships:
# SMODICE and Dual-Force without absorbing falls and without judged checkpoints (the bank is
# the last iteration's), with the policy's earlier rate 3e-4 and no averaging, Dual-Force
# without rehearsal; the FRE at today's sizes (latents of 32
# values keep the bank of every latent met under 5 MB) but the learning rate (1e-4, constant),
# the 3500 steps and the equal family weights it was trained with.
#
# Navigation: the paper-scale set (1,404,002 transitions, all three routes with DART noise;
# the small set's expert is too thin to reach the goal from), every training step with its
# defaults: the SMODICE-expert (its discriminator's r_E for FRE and Dual-Force, its bank the
# evaluation's baseline and filter), the FRE, Dual-Force; except the policy's learning rate
# and averaging, pinned to what the shipped bank was built with (3e-4, the last iterate), and
# the SMODICE-expert's weights the paper's softmax over every row in every pass as then
# (today's navigation defaults cap them, refresh them in blocks and keep 3e-4 and the last
# iterate, train smodice --help; the expert sets the evaluation's filter). With
# Dual-Force's defaults (1e-3, averaged) the same seed's skills take the box on the left
# and over, none on the right, and reach the goal with the left side fenced 0-50% of the time
# (the shipped bank's best 80%). Measured on two quiet cores: collect 5 min, SMODICE 90 min,
# FRE 33 min, Dual-Force 36 min, evaluation 5 min; about three hours.
#
# Evaluation: 30 rollouts per latent of an even subsample over skills and iterations (30
# locomotion latents; 15 navigation latents, each in four worlds, with standardised observations
# clamped to +-5: the fences are walls the data never show, and the bank keeps the clip), and for
# navigation 30 runs per latent and world that start the runtime's start latent and switch to
# that latent (the shipped bank was measured so after it was built: `dualforce eval --latents
# best --fences --after-switch` of the bank, which measures the same).
case $task in
locomotion)
	scale=test
	smodice_flags=(--check-rollouts 0 --absorbing-falls=false --policy-lr 0.0003 --policy-average 0)
	fre_flags=(--width 64 --latent 32 --decoder 256 --ffn 128 --batch 128 --lr 0.0001 --lr-half-life 0 --family-weights 1,1,1,1 --steps 3500)
	df_flags=(--absorbing-falls=false --check-rollouts 0 --rehearsal-steps 0 --policy-lr 0.0003 --policy-average 0)
	eval_flags=(--max-latents 30)
	;;
navigation)
	scale=paper fre_flags=()
	smodice_flags=(--policy-lr 0.0003 --policy-average 0 --min-ess-share 0 --refresh-rows 0)
	df_flags=(--policy-lr 0.0003 --policy-average 0)
	eval_flags=(--max-latents 15 --fences --after-switch --obs-clip 5)
	;;
*) echo "banks/build.sh: unknown task $task (locomotion or navigation)" >&2; exit 2 ;;
esac
work=${BANK_WORK:-out/banks}/$task
bank=banks/$task.npz
df=bin/dualforce
# One OpenBLAS thread per process: more fight the Go scheduler for the cores.
export OPENBLAS_NUM_THREADS=1

step() { echo "== banks/build.sh $task: $*"; }
rm -rf "$work"
mkdir -p "$work"
step "collect"
$df collect --task "$task" --scale "$scale" --out "$work/data.npz" --quiet
step "train smodice"
$df train smodice --offline "$work/data.npz" --out "$work/smodice" "${smodice_flags[@]}" --quiet
step "train fre ${fre_flags[*]}"
$df train fre --offline "$work/data.npz" --smodice "$work/smodice" --out "$work/fre" "${fre_flags[@]}" --quiet
step "train dualforce"
$df train dualforce --offline "$work/data.npz" --smodice "$work/smodice" --fre "$work/fre" --out "$work/dualforce" "${df_flags[@]}" --quiet
step "eval (${eval_flags[*]}) into $bank"
$df eval --task "$task" --bank "$work/dualforce/bank.npz" --expert "$work/smodice/bank.npz" \
	"${eval_flags[@]}" --out "$work/dualforce/eval" --write-bank "$bank" --quiet
step "report"
$df report --out "$work/report.html" "$work/dualforce"
ls -l "$bank"
