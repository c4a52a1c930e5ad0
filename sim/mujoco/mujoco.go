package mujoco

/*
#cgo LDFLAGS: -lmujoco
#cgo noescape mj_ray
#cgo nocallback mj_ray
#cgo noescape mj_contactForce
#cgo nocallback mj_contactForce
#include <mujoco/mujoco.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

// One armed recovery point per OS thread: a cgo call runs start to end on one thread, so the
// handler always jumps back into the guarded call that is running on its own thread.
static __thread jmp_buf dfJump;
static __thread int dfArmed;
static __thread char* dfErr;
static __thread int dfErrLen;

static void dfOnError(const char* msg) {
	if (dfArmed) {
		dfArmed = 0;
		snprintf(dfErr, dfErrLen, "%s", msg ? msg : "unknown MuJoCo error");
		longjmp(dfJump, 1);
	}
	// Every MuJoCo entry point that can raise is guarded; reaching here is a binding bug.
	fprintf(stderr, "mujoco: unguarded fatal error: %s\n", msg ? msg : "");
	abort();
}

// Warnings are counted in mjData.warning; the default handler would print and write
// MUJOCO_LOG.TXT into the working directory.
static void dfOnWarning(const char* msg) { (void)msg; }

static void dfInstallHandlers(void) {
	mju_user_error = dfOnError;
	mju_user_warning = dfOnWarning;
}

#define DF_GUARD(errbuf, errlen, failret)  \
	dfErr = (errbuf); dfErrLen = (errlen); \
	if (setjmp(dfJump) != 0) { return (failret); } \
	dfArmed = 1;

static mjModel* dfLoadFile(const char* path, char* errbuf, int errlen) {
	DF_GUARD(errbuf, errlen, NULL)
	mjModel* m = mj_loadXML(path, NULL, errbuf, errlen);
	dfArmed = 0;
	return m;
}

static const char dfVFSName[] = "model.xml";

// The VFS is 2 MB: it lives on the C heap for the duration of the load only.
static mjModel* dfLoadBuffer(const char* xml, int len, char* errbuf, int errlen) {
	mjVFS* vfs = (mjVFS*)malloc(sizeof(mjVFS));
	if (vfs == NULL) {
		snprintf(errbuf, errlen, "out of memory allocating the MuJoCo VFS");
		return NULL;
	}
	mj_defaultVFS(vfs);
	if (mj_makeEmptyFileVFS(vfs, dfVFSName, len) != 0) {
		snprintf(errbuf, errlen, "could not create the in-memory model file");
		free(vfs);
		return NULL;
	}
	int idx = mj_findFileVFS(vfs, dfVFSName);
	memcpy(vfs->filedata[idx], xml, len);
	mjModel* volatile m = NULL;
	dfErr = errbuf; dfErrLen = errlen;
	if (setjmp(dfJump) == 0) {
		dfArmed = 1;
		m = mj_loadXML(dfVFSName, vfs, errbuf, errlen);
		dfArmed = 0;
	}
	mj_deleteVFS(vfs);
	free(vfs);
	return m;
}

static mjData* dfMakeData(const mjModel* m, char* errbuf, int errlen) {
	DF_GUARD(errbuf, errlen, NULL)
	mjData* d = mj_makeData(m);
	dfArmed = 0;
	return d;
}

static int dfDivergence(const mjData* d) {
	return d->warning[mjWARN_BADQPOS].number + d->warning[mjWARN_BADQVEL].number +
	       d->warning[mjWARN_BADQACC].number + d->warning[mjWARN_BADCTRL].number;
}

// Returns 0 on success, -1 on a fatal MuJoCo error (message in errbuf), or 1 when MuJoCo
// reported non-finite state during the steps (it resets the data when that happens).
static int dfStep(const mjModel* m, mjData* d, int n, char* errbuf, int errlen) {
	int before = dfDivergence(d);
	DF_GUARD(errbuf, errlen, -1)
	for (int i = 0; i < n; i++) {
		mj_step(m, d);
	}
	dfArmed = 0;
	return dfDivergence(d) != before ? 1 : 0;
}

static int dfForward(const mjModel* m, mjData* d, char* errbuf, int errlen) {
	int before = dfDivergence(d);
	DF_GUARD(errbuf, errlen, -1)
	mj_forward(m, d);
	dfArmed = 0;
	return dfDivergence(d) != before ? 1 : 0;
}

static int dfReset(const mjModel* m, mjData* d, char* errbuf, int errlen) {
	DF_GUARD(errbuf, errlen, -1)
	mj_resetData(m, d);
	dfArmed = 0;
	return 0;
}

static int dfName2ID(const mjModel* m, int type, const char* name) {
	return mj_name2id(m, type, name);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// ErrClosed is returned by methods of a World after Close.
var ErrClosed = errors.New("mujoco: world is closed")

// ErrNotFound is returned when a named object does not exist in the model.
var ErrNotFound = errors.New("mujoco: no such object")

// ErrDiverged is returned by Step and Forward when MuJoCo found non-finite positions,
// velocities, accelerations or controls. MuJoCo has then reset the simulation data.
var ErrDiverged = errors.New("mujoco: simulation diverged (non-finite state); data was reset")

// Error is a fatal error reported by MuJoCo itself (mju_error or a compile error).
type Error struct {
	Op  string // what the binding was doing: "load", "make data", "step", ...
	Msg string // MuJoCo's own text
}

func (e *Error) Error() string { return "mujoco: " + e.Op + ": " + e.Msg }

// ObjType selects a kind of named model object (mjtObj).
type ObjType int

// Object kinds used with World.ID.
const (
	ObjBody     ObjType = C.mjOBJ_BODY
	ObjJoint    ObjType = C.mjOBJ_JOINT
	ObjGeom     ObjType = C.mjOBJ_GEOM
	ObjSite     ObjType = C.mjOBJ_SITE
	ObjActuator ObjType = C.mjOBJ_ACTUATOR
	ObjSensor   ObjType = C.mjOBJ_SENSOR
)

func (t ObjType) String() string {
	switch t {
	case ObjBody:
		return "body"
	case ObjJoint:
		return "joint"
	case ObjGeom:
		return "geom"
	case ObjSite:
		return "site"
	case ObjActuator:
		return "actuator"
	case ObjSensor:
		return "sensor"
	}
	return fmt.Sprintf("object type %d", int(t))
}

// Sizes are the dimensions of a compiled model.
type Sizes struct {
	NQ, NV, NU                  int // generalised coordinates, degrees of freedom, actuators
	NBody, NJoint, NGeom        int
	NSite, NSensor, NSensorData int
	NConMax                     int // capacity of the contact list
}

// Contact is one active contact, copied out of mjData.contact.
type Contact struct {
	Dist         float64    // signed distance; negative is penetration
	Pos          [3]float64 // world position (midpoint between the geoms)
	Frame        [9]float64 // contact frame, rows; the normal (geom1 -> geom2) is Frame[0:3]
	Geom1, Geom2 int
}

// World is one compiled model (mjModel) with its simulation data (mjData), both owned by C.
// A World is not safe for concurrent use; use one World per goroutine.
type World struct {
	m      *C.mjModel
	d      *C.mjData
	errbuf *C.char

	// Zero-copy views into C memory, valid until Close.
	qpos, qvel, qacc, ctrl, qfrcApplied, sensordata []float64
	xpos, xquat, xmat, siteXPos, siteXMat           []float64
}

const errBufLen = 1024

// loadMu serialises loads: MuJoCo keeps the last parsed XML in a global.
var loadMu sync.Mutex

// LoadFile compiles the MJCF (or URDF) file at path.
func LoadFile(path string) (*World, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("mujoco: load %s: %w", path, err)
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	return load(func(errbuf *C.char) *C.mjModel {
		return C.dfLoadFile(cpath, errbuf, errBufLen)
	})
}

// LoadXML compiles an MJCF document held in memory. It may not reference other files
// (meshes, includes): the document is the only file in MuJoCo's virtual file system.
func LoadXML(xml []byte) (*World, error) {
	if len(xml) == 0 {
		return nil, &Error{Op: "load", Msg: "empty XML document"}
	}
	cxml := C.CBytes(xml)
	defer C.free(cxml)
	return load(func(errbuf *C.char) *C.mjModel {
		return C.dfLoadBuffer((*C.char)(cxml), C.int(len(xml)), errbuf, errBufLen)
	})
}

func load(compile func(errbuf *C.char) *C.mjModel) (*World, error) {
	errbuf := (*C.char)(C.calloc(errBufLen, 1))
	if errbuf == nil {
		return nil, &Error{Op: "load", Msg: "out of memory"}
	}
	loadMu.Lock()
	// The XML compiler may swap MuJoCo's global handlers while it runs; install ours again.
	C.dfInstallHandlers()
	m := compile(errbuf)
	C.dfInstallHandlers()
	loadMu.Unlock()
	if m == nil {
		msg := C.GoString(errbuf)
		C.free(unsafe.Pointer(errbuf))
		if msg == "" {
			msg = "model failed to compile (no message)"
		}
		return nil, &Error{Op: "load", Msg: msg}
	}
	d := C.dfMakeData(m, errbuf, errBufLen)
	if d == nil {
		msg := C.GoString(errbuf)
		C.mj_deleteModel(m)
		C.free(unsafe.Pointer(errbuf))
		return nil, &Error{Op: "make data", Msg: msg}
	}
	w := &World{m: m, d: d, errbuf: errbuf}
	w.bindViews()
	return w, nil
}

func view(p *C.mjtNum, n C.int) []float64 {
	if p == nil || n <= 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(p)), int(n))
}

func (w *World) bindViews() {
	m, d := w.m, w.d
	w.qpos = view(d.qpos, m.nq)
	w.qvel = view(d.qvel, m.nv)
	w.qacc = view(d.qacc, m.nv)
	w.ctrl = view(d.ctrl, m.nu)
	w.qfrcApplied = view(d.qfrc_applied, m.nv)
	w.sensordata = view(d.sensordata, m.nsensordata)
	w.xpos = view(d.xpos, 3*m.nbody)
	w.xquat = view(d.xquat, 4*m.nbody)
	w.xmat = view(d.xmat, 9*m.nbody)
	w.siteXPos = view(d.site_xpos, 3*m.nsite)
	w.siteXMat = view(d.site_xmat, 9*m.nsite)
}

// Close frees the model and data. It is safe to call more than once. Slices obtained from
// the World's views must not be used afterwards.
func (w *World) Close() error {
	if w.d == nil {
		return nil
	}
	C.mj_deleteData(w.d)
	C.mj_deleteModel(w.m)
	C.free(unsafe.Pointer(w.errbuf))
	*w = World{}
	return nil
}

func (w *World) status(op string, rc C.int) error {
	switch {
	case rc < 0:
		return &Error{Op: op, Msg: C.GoString(w.errbuf)}
	case rc > 0:
		return ErrDiverged
	}
	return nil
}

// Step advances the simulation by n timesteps (mj_step) in one call into C.
func (w *World) Step(n int) error {
	if w.d == nil {
		return ErrClosed
	}
	if n <= 0 {
		return nil
	}
	return w.status("step", C.dfStep(w.m, w.d, C.int(n), w.errbuf, errBufLen))
}

// Forward computes derived quantities (poses, contacts, sensors) for the current state
// without advancing time (mj_forward).
func (w *World) Forward() error {
	if w.d == nil {
		return ErrClosed
	}
	return w.status("forward", C.dfForward(w.m, w.d, w.errbuf, errBufLen))
}

// Reset puts the data back to the model's initial state (mj_resetData).
func (w *World) Reset() error {
	if w.d == nil {
		return ErrClosed
	}
	return w.status("reset", C.dfReset(w.m, w.d, w.errbuf, errBufLen))
}

// Sizes reports the model's dimensions.
func (w *World) Sizes() Sizes {
	if w.m == nil {
		return Sizes{}
	}
	m := w.m
	return Sizes{
		NQ: int(m.nq), NV: int(m.nv), NU: int(m.nu),
		NBody: int(m.nbody), NJoint: int(m.njnt), NGeom: int(m.ngeom),
		NSite: int(m.nsite), NSensor: int(m.nsensor), NSensorData: int(m.nsensordata),
		NConMax: int(m.nconmax),
	}
}

// Timestep is the physics step in seconds.
func (w *World) Timestep() float64 {
	if w.m == nil {
		return 0
	}
	return float64(w.m.opt.timestep)
}

// SetTimestep changes the physics step; dt must be positive and finite.
func (w *World) SetTimestep(dt float64) error {
	if w.m == nil {
		return ErrClosed
	}
	if !(dt > 0) || dt > 1 {
		return fmt.Errorf("mujoco: timestep %g s out of range (0, 1]", dt)
	}
	w.m.opt.timestep = C.mjtNum(dt)
	return nil
}

// Time is the simulation time in seconds.
func (w *World) Time() float64 {
	if w.d == nil {
		return 0
	}
	return float64(w.d.time)
}

// SetTime sets the simulation clock.
func (w *World) SetTime(t float64) {
	if w.d != nil {
		w.d.time = C.mjtNum(t)
	}
}

// TotalMass is the sum of all body masses.
func (w *World) TotalMass() float64 {
	if w.m == nil {
		return 0
	}
	return float64(C.mj_getTotalmass(w.m))
}

// Gravity is the model's gravity vector (m/s^2, world frame).
func (w *World) Gravity() [3]float64 {
	if w.m == nil {
		return [3]float64{}
	}
	g := w.m.opt.gravity
	return [3]float64{float64(g[0]), float64(g[1]), float64(g[2])}
}

// QPos is a view of the generalised positions (nq), valid until Close. Writes go straight
// into the simulation; call Forward to refresh derived quantities after writing.
func (w *World) QPos() []float64 { return w.qpos }

// QVel is a view of the generalised velocities (nv).
func (w *World) QVel() []float64 { return w.qvel }

// QAcc is a view of the generalised accelerations (nv) of the last step.
func (w *World) QAcc() []float64 { return w.qacc }

// Ctrl is a view of the actuator controls (nu).
func (w *World) Ctrl() []float64 { return w.ctrl }

// QfrcApplied is a view of the applied generalised forces (nv).
func (w *World) QfrcApplied() []float64 { return w.qfrcApplied }

// SensorData is a view of all sensor outputs (nsensordata), as of the last Step/Forward.
func (w *World) SensorData() []float64 { return w.sensordata }

// XPos is a view of all body frame positions, 3 per body, world frame.
func (w *World) XPos() []float64 { return w.xpos }

// XQuat is a view of all body orientations, 4 per body (w, x, y, z).
func (w *World) XQuat() []float64 { return w.xquat }

// XMat is a view of all body rotation matrices, 9 per body, row-major.
func (w *World) XMat() []float64 { return w.xmat }

// SiteXPos is a view of all site positions, 3 per site, world frame.
func (w *World) SiteXPos() []float64 { return w.siteXPos }

// SiteXMat is a view of all site rotation matrices, 9 per site, row-major.
func (w *World) SiteXMat() []float64 { return w.siteXMat }

// BodyPose returns a body's world position and orientation quaternion (w, x, y, z).
func (w *World) BodyPose(body int) (pos [3]float64, quat [4]float64, err error) {
	if w.m == nil {
		return pos, quat, ErrClosed
	}
	if body < 0 || body >= int(w.m.nbody) {
		return pos, quat, fmt.Errorf("mujoco: body id %d out of range [0,%d)", body, int(w.m.nbody))
	}
	copy(pos[:], w.xpos[3*body:])
	copy(quat[:], w.xquat[4*body:])
	return pos, quat, nil
}

// ID looks up a named object.
func (w *World) ID(kind ObjType, name string) (int, error) {
	if w.m == nil {
		return -1, ErrClosed
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	id := int(C.dfName2ID(w.m, C.int(kind), cname))
	if id < 0 {
		return -1, fmt.Errorf("%w: %s %q", ErrNotFound, kind, name)
	}
	return id, nil
}

func (w *World) checkID(kind ObjType, id, n int) error {
	if w.m == nil {
		return ErrClosed
	}
	if id < 0 || id >= n {
		return fmt.Errorf("mujoco: %s id %d out of range [0,%d)", kind, id, n)
	}
	return nil
}

// JointAddr returns where a joint's coordinates start in qpos and in qvel.
func (w *World) JointAddr(joint int) (qposAdr, dofAdr int, err error) {
	if err := w.checkID(ObjJoint, joint, int(w.Sizes().NJoint)); err != nil {
		return 0, 0, err
	}
	qa := unsafe.Slice(w.m.jnt_qposadr, w.m.njnt)
	da := unsafe.Slice(w.m.jnt_dofadr, w.m.njnt)
	return int(qa[joint]), int(da[joint]), nil
}

// JointRange returns a joint's limits (meaningful for limited hinge and slide joints).
func (w *World) JointRange(joint int) (lo, hi float64, err error) {
	if err := w.checkID(ObjJoint, joint, int(w.Sizes().NJoint)); err != nil {
		return 0, 0, err
	}
	r := view(w.m.jnt_range, 2*w.m.njnt)
	return r[2*joint], r[2*joint+1], nil
}

// SensorAddr returns where a sensor's values start in SensorData and how many there are.
func (w *World) SensorAddr(sensor int) (adr, dim int, err error) {
	if err := w.checkID(ObjSensor, sensor, int(w.Sizes().NSensor)); err != nil {
		return 0, 0, err
	}
	a := unsafe.Slice(w.m.sensor_adr, w.m.nsensor)
	d := unsafe.Slice(w.m.sensor_dim, w.m.nsensor)
	return int(a[sensor]), int(d[sensor]), nil
}

// GeomBody returns the body a geom belongs to.
func (w *World) GeomBody(geom int) (int, error) {
	if err := w.checkID(ObjGeom, geom, int(w.Sizes().NGeom)); err != nil {
		return -1, err
	}
	return int(unsafe.Slice(w.m.geom_bodyid, w.m.ngeom)[geom]), nil
}

// NumContacts is the number of contacts found by the last Step/Forward.
func (w *World) NumContacts() int {
	if w.d == nil {
		return 0
	}
	return int(w.d.ncon)
}

// Contact copies out contact i, 0 <= i < NumContacts().
func (w *World) Contact(i int) (Contact, error) {
	if w.d == nil {
		return Contact{}, ErrClosed
	}
	if i < 0 || i >= int(w.d.ncon) {
		return Contact{}, fmt.Errorf("mujoco: contact %d out of range [0,%d)", i, int(w.d.ncon))
	}
	c := &unsafe.Slice(w.d.contact, w.d.ncon)[i]
	out := Contact{Dist: float64(c.dist), Geom1: int(c.geom1), Geom2: int(c.geom2)}
	for k := range out.Pos {
		out.Pos[k] = float64(c.pos[k])
	}
	for k := range out.Frame {
		out.Frame[k] = float64(c.frame[k])
	}
	return out, nil
}

// ContactForce returns contact i's force and torque in the contact frame (normal first).
func (w *World) ContactForce(i int) ([6]float64, error) {
	var f [6]float64
	if w.d == nil {
		return f, ErrClosed
	}
	if i < 0 || i >= int(w.d.ncon) {
		return f, fmt.Errorf("mujoco: contact %d out of range [0,%d)", i, int(w.d.ncon))
	}
	C.mj_contactForce(w.m, w.d, C.int(i), (*C.mjtNum)(unsafe.Pointer(&f[0])))
	return f, nil
}

// RayFilter selects what a ray can hit.
type RayFilter struct {
	// Groups, when non-nil, lists which geom groups (0..5) the ray sees; nil sees all groups.
	Groups *[6]bool
	// SkipStatic excludes geoms of bodies welded to the world (terrain).
	SkipStatic bool
	// ExcludeBody is a body whose geoms are ignored; -1 for none.
	ExcludeBody int
}

// Ray casts from pnt along vec (not necessarily unit) against visible geoms (rgba alpha
// non-zero). It returns the distance in units of |vec| to the nearest surface and that
// geom's id, or dist = -1 and geom = -1 when nothing is hit. Poses are those of the last
// Step/Forward.
func (w *World) Ray(pnt, vec [3]float64, f RayFilter) (dist float64, geom int) {
	if w.d == nil {
		return -1, -1
	}
	var groups [6]C.mjtByte
	var groupPtr *C.mjtByte
	if f.Groups != nil {
		for i, on := range f.Groups {
			if on {
				groups[i] = 1
			}
		}
		groupPtr = &groups[0]
	}
	static := C.mjtByte(1)
	if f.SkipStatic {
		static = 0
	}
	var id C.int
	d := C.mj_ray(w.m, w.d, (*C.mjtNum)(unsafe.Pointer(&pnt[0])), (*C.mjtNum)(unsafe.Pointer(&vec[0])),
		groupPtr, static, C.int(f.ExcludeBody), &id)
	return float64(d), int(id)
}

// Version is the MuJoCo library version string.
func Version() string { return C.GoString(C.mj_versionString()) }
