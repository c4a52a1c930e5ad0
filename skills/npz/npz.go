// Package npz owns the one archive layer of the project's files: a zip of
// named .npy arrays (what numpy.savez writes and numpy.load opens) plus
// whatever raw members a format adds (a manifest.json). Skill banks
// (skills), datasets (trainer/datafile) and training checkpoints
// (trainer/checkpoint) are all written and read through it; each of those
// keeps its own manifest, validation and limits on top.
//
// Writing: members are stored (not deflated: float data barely compresses,
// and numpy.savez stores too) with a fixed modification time, so equal
// contents give equal files; arrays are streamed in chunks without copying.
// Reading: the zip directory is checked against Limits before anything is
// allocated (member count, declared sizes against the file and the budget,
// stored members whose sizes agree, a bounded deflate ratio), duplicate
// names are refused, every .npy header must match one strict grammar
// (numpy's own: little-endian, C order, a known dtype) before npyio reads
// the data, and every member is read to its end so the zip reader checks
// its CRC-32. Errors wrap one of the sentinels below; nothing panics.
//
// This package may import only the standard library and npyio (it lives
// under skills/, which the on-robot runtime imports).
package npz
