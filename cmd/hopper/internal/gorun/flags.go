package gorun

// flagKind says what hopper does with one of go test's flags.
type flagKind int

const (
	// buildFlag goes to go list and go test -c.
	buildFlag flagKind = iota + 1
	// testFlag goes to the test binary, as -test.<name>.
	testFlag
	// refusedFlag makes no sense here; refusal says why.
	refusedFlag
	// ignoredFlag is accepted and has no effect (it concerns a step hopper
	// does not take).
	ignoredFlag
)

// goFlag is one of go test's flags.
type goFlag struct {
	kind    flagKind
	boolean bool   // takes no value after a space
	why     string // of a refused flag
}

// goTestFlags are the flags go test takes that hopper knows. Anything
// else is refused as unknown, so that no flag is silently dropped.
var goTestFlags = map[string]goFlag{
	// Build flags.
	"race": {kind: buildFlag, boolean: true}, "msan": {kind: buildFlag, boolean: true},
	"asan": {kind: buildFlag, boolean: true}, "cover": {kind: buildFlag, boolean: true},
	"trimpath": {kind: buildFlag, boolean: true}, "a": {kind: buildFlag, boolean: true},
	"linkshared": {kind: buildFlag, boolean: true}, "modcacherw": {kind: buildFlag, boolean: true},
	"tags": {kind: buildFlag}, "ldflags": {kind: buildFlag}, "gcflags": {kind: buildFlag},
	"asmflags": {kind: buildFlag}, "mod": {kind: buildFlag}, "modfile": {kind: buildFlag},
	"covermode": {kind: buildFlag}, "coverpkg": {kind: buildFlag}, "pgo": {kind: buildFlag},
	"overlay": {kind: buildFlag}, "toolexec": {kind: buildFlag}, "installsuffix": {kind: buildFlag},
	"compiler": {kind: buildFlag}, "gccgoflags": {kind: buildFlag}, "buildmode": {kind: buildFlag},
	"buildvcs": {kind: buildFlag}, "p": {kind: buildFlag},
	// go test -c runs no vet: -vet has nothing to change.
	"vet": {kind: ignoredFlag},

	// Test binary flags.
	"short": {kind: testFlag, boolean: true}, "v": {kind: testFlag, boolean: true},
	"failfast": {kind: testFlag, boolean: true}, "benchmem": {kind: testFlag, boolean: true},
	"fullpath": {kind: testFlag, boolean: true},
	"run":      {kind: testFlag}, "skip": {kind: testFlag}, "count": {kind: testFlag},
	"timeout": {kind: testFlag}, "parallel": {kind: testFlag}, "cpu": {kind: testFlag},
	"bench": {kind: testFlag}, "benchtime": {kind: testFlag}, "shuffle": {kind: testFlag},

	// Refused.
	"c":            {kind: refusedFlag, boolean: true, why: "hopper compiles the test binaries itself"},
	"o":            {kind: refusedFlag, why: "hopper compiles the test binaries itself"},
	"json":         {kind: refusedFlag, boolean: true, why: "hopper reads the test events itself; per-test results go to --junit-out and --summary-out"},
	"exec":         {kind: refusedFlag, why: "hopper runs the test binaries itself"},
	"list":         {kind: refusedFlag, why: "it lists tests instead of running them; use go test -list"},
	"i":            {kind: refusedFlag, boolean: true, why: "it is gone from go test"},
	"n":            {kind: refusedFlag, boolean: true, why: "it prints commands instead of running them"},
	"x":            {kind: refusedFlag, boolean: true, why: "hopper runs no go test per unit whose commands it could print"},
	"work":         {kind: refusedFlag, boolean: true, why: "hopper keeps the binaries in a folder of its own"},
	"args":         {kind: refusedFlag, boolean: true, why: "every argument after -- is read as go test's"},
	"fuzz":         {kind: refusedFlag, why: "fuzzing runs one package on one machine; use go test -fuzz"},
	"coverprofile": {kind: refusedFlag, why: "the packages run apart, on any worker; -cover prints each one's coverage"},
	"cpuprofile":   {kind: refusedFlag, why: "profiles are written per package, on any worker; use go test"},
	"memprofile":   {kind: refusedFlag, why: "profiles are written per package, on any worker; use go test"},
	"blockprofile": {kind: refusedFlag, why: "profiles are written per package, on any worker; use go test"},
	"mutexprofile": {kind: refusedFlag, why: "profiles are written per package, on any worker; use go test"},
	"trace":        {kind: refusedFlag, why: "traces are written per package, on any worker; use go test"},
	"outputdir":    {kind: refusedFlag, why: "profiles are written per package, on any worker; use go test"},
}
