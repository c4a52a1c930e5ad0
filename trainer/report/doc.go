// Package report owns the evaluation report: one self-contained HTML page (every figure a PNG
// embedded as a data URI, no script, no outside reference: it opens from disk with no server)
// that answers, for one or more run directories, the paper's three questions: are the skills
// different (successor features), do they still imitate and do the task (the filter against
// the SMODICE-expert), and does the diversity make the robot robust when a path is fenced off.
//
// A run directory holds what training and evaluation left there: the evaluation results
// (eval.json, as dualforce eval writes it, directly in the directory or in its eval/
// subdirectory; read and checked by eval.ReadResult) and any JSON-lines metrics logs
// (metrics.jsonl, in the directory or one level below: discriminator, FRE, SMODICE, Dual-Force,
// DOI runs each write one; checks.jsonl, a run's judged checkpoints, is shown the same way). The page shows per run: returns and the filter; the heat map of
// pairwise online-SF distances over the reference and the latents that pass the filter (the
// reference, the SMODICE-expert, as row 1); a PCA projection of the same SFs; per-skill
// top-down base paths of every evaluated latent coloured by base height; every numeric column of every metrics log; the
// fence robustness table; and, across runs, a side-by-side comparison (distinct behaviour modes
// among passing latents, mean minimum SF distance, share passing the filter, returns).
package report
