// Package inspect owns the human-readable summary of a dataset archive: counts per mode,
// episode outcomes, value ranges of every observation field and of the actions, the check for
// NaN and Inf (the archive reader refuses any), and a PNG with the base height histogram of each
// mode and top-down traces of its episodes.
package inspect
