// Command linkcheck checks the link to an ODRI master board (real or emulated): it connects a
// host session, enables every motor with zero gains (no torque), and prints live link statistics
// once per second, with a plain explanation for each way the link can fail.
package main
