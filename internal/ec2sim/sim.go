// Package ec2sim is a test-only EC2 endpoint: an HTTP server on loopback
// speaking EC2's Query API (form-encoded requests, XML responses and XML
// errors with EC2's element names) for the calls the pgbench provider makes.
// A real aws-sdk-go-v2 ec2.Client is pointed at it with BaseEndpoint. Every
// instance that is launched is a real test host (a network namespace
// running sshd, see internal/testhost) that admits the launch's key pair,
// and terminating the instance tears that host down.
package ec2sim

import (
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// Options shape a simulated region. Zero values take the defaults noted.
type Options struct {
	Region  string   // default "us-east-2"
	Zones   []string // default <region>a, b, c
	OwnerID string   // account id, default "123456789012"
	// PendingDelay is how long an instance stays pending (default 200ms).
	PendingDelay time.Duration
	// ShuttingDownDelay is how long it stays shutting-down (default 200ms).
	ShuttingDownDelay time.Duration
	// StoppingDelay is how long it stays stopping (default 200ms).
	StoppingDelay time.Duration
	// TerminatedVisibleFor is how long DescribeInstances still lists a
	// terminated instance (EC2: about an hour; default 1h).
	TerminatedVisibleFor time.Duration
	// Images are what DescribeImages knows (default: two Debian images).
	Images []Image
}

// Image is an AMI the simulated region offers.
type Image struct {
	ID, Name, OwnerID string
	Created           time.Time
	Architecture      string
}

// Instance-type catalogue, a subset of EC2's with real figures.
var instanceTypes = map[string]xInstanceType{}

func init() {
	for _, it := range []struct {
		name   string
		vcpus  int
		memGiB int64
		metal  bool
	}{
		{"r8i.metal-96xl", 384, 3072, true},
		{"m6i.metal", 128, 512, true},
		{"c7i.metal-48xl", 192, 384, true},
		{"r7i.metal-48xl", 192, 1536, true},
		{"m7i.2xlarge", 8, 32, false},
		{"t3.micro", 2, 1, false},
		{"t3.medium", 2, 4, false},
		{"c6i.large", 2, 4, false},
	} {
		x := xInstanceType{InstanceType: it.name, CurrentGeneration: true, BareMetal: it.metal}
		x.VCPUInfo.DefaultVCPUs = it.vcpus
		x.VCPUInfo.DefaultCores = it.vcpus / 2
		x.VCPUInfo.DefaultThreadsPerCore = 2
		x.MemoryInfo.SizeInMiB = it.memGiB * 1024
		instanceTypes[it.name] = x
	}
}

// State names and codes as EC2 reports them.
const (
	Pending      = "pending"
	Running      = "running"
	ShuttingDown = "shutting-down"
	Terminated   = "terminated"
	Stopping     = "stopping"
	Stopped      = "stopped"
)

var stateCodes = map[string]int{Pending: 0, Running: 16, ShuttingDown: 32, Terminated: 48, Stopping: 64, Stopped: 80}

// Server is a simulated EC2 region. Create it with New.
type Server struct {
	// URL is the endpoint to give the SDK as BaseEndpoint.
	URL string

	t    testing.TB
	opts Options
	http *httptest.Server

	mu        sync.Mutex
	seq       int
	instances map[string]*instance
	order     []string
	tokens    map[string]string // client token -> reservation id
	keys      map[string]keyPair
	groups    map[string]*group
	calls     map[string]int
	wg        sync.WaitGroup
	closed    bool

	// fault injection, guarded by mu
	capacity      map[string]bool // zone -> InsufficientInstanceCapacity
	unsupported   map[string]bool // "type/zone" -> Unsupported
	throttle      int
	noSSH         int
	slowTerm      time.Duration
	failAfterRun  int
	failBoot      int
	hostErr       error
	lastRunParams url.Values
}

type keyPair struct {
	id, name, fingerprint, line string
}

type group struct {
	id, name, desc, vpc string
	ingress             []string // "tcp:22:0.0.0.0/0"
}

type instance struct {
	id, reservation, imageID, typ, zone, keyName, subnet, token string
	groups                                                      []string
	state                                                       string
	reason                                                      string
	stateReason                                                 *xStateReason
	launched                                                    time.Time
	terminatedAt                                                time.Time
	tags                                                        map[string]string
	shutdownBehavior                                            string
	rootSize                                                    int
	rootType                                                    string
	host                                                        *testhost.Host
	hostTB                                                      *hostTB
	timers                                                      []*time.Timer
	deadMan                                                     time.Duration
}

// New starts a simulated region on 127.0.0.1 and stops it, terminating
// every instance and removing its test host, in t.Cleanup. It skips (or
// fails under PGBENCH_REQUIRE_REAL_HOSTS=1) where test hosts cannot be made.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "ip", "/usr/sbin", "/sbin")
	if opts.Region == "" {
		opts.Region = "us-east-2"
	}
	if len(opts.Zones) == 0 {
		opts.Zones = []string{opts.Region + "a", opts.Region + "b", opts.Region + "c"}
	}
	if opts.OwnerID == "" {
		opts.OwnerID = "123456789012"
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&opts.PendingDelay, 200*time.Millisecond)
	def(&opts.ShuttingDownDelay, 200*time.Millisecond)
	def(&opts.StoppingDelay, 200*time.Millisecond)
	def(&opts.TerminatedVisibleFor, time.Hour)
	if opts.Images == nil {
		opts.Images = []Image{
			{ID: "ami-0d1e2b3c4a5f60718", Name: "debian-12-amd64-20240201-1644", OwnerID: "136693071363", Created: time.Date(2024, 2, 1, 17, 0, 0, 0, time.UTC), Architecture: "x86_64"},
			{ID: "ami-0a9b8c7d6e5f40312", Name: "debian-12-amd64-20241104-1921", OwnerID: "136693071363", Created: time.Date(2024, 11, 4, 20, 0, 0, 0, time.UTC), Architecture: "x86_64"},
		}
	}
	s := &Server{
		t: t, opts: opts,
		instances:   map[string]*instance{},
		tokens:      map[string]string{},
		keys:        map[string]keyPair{},
		groups:      map[string]*group{},
		calls:       map[string]int{},
		capacity:    map[string]bool{},
		unsupported: map[string]bool{},
	}
	s.http = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.http.URL
	t.Cleanup(s.close)
	return s
}

// Region is the simulated region's name.
func (s *Server) Region() string { return s.opts.Region }

// Zones are the simulated region's availability zones.
func (s *Server) Zones() []string { return append([]string(nil), s.opts.Zones...) }

func (s *Server) close() {
	s.http.Close()
	s.mu.Lock()
	s.closed = true
	var hosts []*instance
	for _, in := range s.instances {
		for _, tm := range in.timers {
			tm.Stop()
		}
		if in.hostTB != nil {
			hosts = append(hosts, in)
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	for _, in := range hosts {
		in.hostTB.teardown()
	}
}

// --- fault injection -------------------------------------------------------

// FailCapacity makes RunInstances in zone fail with
// InsufficientInstanceCapacity (on = false lifts it).
func (s *Server) FailCapacity(zone string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capacity[zone] = on
}

// Unsupported makes RunInstances of instanceType in zone fail with
// Unsupported, as EC2 does for a type a zone does not offer.
func (s *Server) Unsupported(instanceType, zone string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unsupported[instanceType+"/"+zone] = true
}

// Throttle makes the next n requests fail with RequestLimitExceeded (503).
func (s *Server) Throttle(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle = n
}

// NoSSH makes the next n launched instances run without sshd: they reach
// running but never accept SSH.
func (s *Server) NoSSH(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noSSH = n
}

// SlowTermination makes instances terminated from now on stay
// shutting-down for d.
func (s *Server) SlowTermination(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slowTerm = d
}

// FailAfterCreate makes the next n RunInstances calls create (or, for a
// repeated client token, find) the instance and then answer 500
// InternalError, the case of a launch whose response was lost.
func (s *Server) FailAfterCreate(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failAfterRun = n
}

// FailBoot makes the next n launched instances fail to boot: they go from
// pending to shutting-down and terminated with state reason
// Server.InternalError, as EC2 does with a launch that fails on its side.
func (s *Server) FailBoot(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failBoot = n
}

// Calls reports how many requests of an action (e.g. "RunInstances") the
// server received, throttled ones included.
func (s *Server) Calls(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[action]
}

// LastRunInstances returns the form parameters of the last RunInstances.
func (s *Server) LastRunInstances() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastRunParams
}

// InstanceInfo is the simulator's view of one instance, for assertions.
type InstanceInfo struct {
	ID, State, Zone, Type, KeyName, UserDataShutdown string
	Tags                                             map[string]string
	Host                                             *testhost.Host // nil once torn down
	Namespace                                        string
	DeadMan                                          time.Duration
	ShutdownBehavior                                 string
}

// Instances lists every instance ever launched, terminated ones included.
func (s *Server) Instances() []InstanceInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []InstanceInfo
	for _, id := range s.order {
		in := s.instances[id]
		ii := InstanceInfo{ID: in.id, State: in.state, Zone: in.zone, Type: in.typ, KeyName: in.keyName,
			Tags: copyTags(in.tags), Host: in.host, DeadMan: in.deadMan, ShutdownBehavior: in.shutdownBehavior}
		if in.host != nil {
			ii.Namespace = in.host.Namespace
		}
		out = append(out, ii)
	}
	return out
}

// Instance returns one instance's view; ok is false for an unknown id.
func (s *Server) Instance(id string) (InstanceInfo, bool) {
	for _, ii := range s.Instances() {
		if ii.ID == id {
			return ii, true
		}
	}
	return InstanceInfo{}, false
}

// --- HTTP ----------------------------------------------------------------

type apiError struct {
	status        int
	code, message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	reqID := s.newID("")
	if err := r.ParseForm(); err != nil {
		s.writeError(w, reqID, errf(400, "MalformedQueryString", "%v", err))
		return
	}
	action := r.Form.Get("Action")
	s.mu.Lock()
	s.calls[action]++
	throttled := s.throttle > 0
	if throttled {
		s.throttle--
	}
	s.mu.Unlock()
	if throttled {
		s.writeError(w, reqID, errf(503, "RequestLimitExceeded", "Request limit exceeded."))
		return
	}
	// The SDK signs every request; an unsigned one means the client was
	// built without credentials, which real EC2 refuses the same way.
	if auth := r.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=") ||
		!strings.Contains(auth, "/"+s.opts.Region+"/ec2/aws4_request") {
		s.writeError(w, reqID, errf(401, "AuthFailure", "AWS was not able to validate the provided access credentials"))
		return
	}
	if v := r.Form.Get("Version"); v != "2016-11-15" {
		s.writeError(w, reqID, errf(400, "InvalidParameterValue", "Invalid API version %q", v))
		return
	}
	var (
		resp any
		err  *apiError
	)
	switch action {
	case "RunInstances":
		resp, err = s.runInstances(r.Form, reqID)
	case "DescribeInstances":
		resp, err = s.describeInstances(r.Form, reqID)
	case "TerminateInstances":
		resp, err = s.terminateInstances(r.Form, reqID)
	case "CreateTags":
		resp, err = s.createTags(r.Form, reqID)
	case "DescribeInstanceTypes":
		resp, err = s.describeInstanceTypes(r.Form, reqID)
	case "DescribeImages":
		resp, err = s.describeImages(r.Form, reqID)
	case "ImportKeyPair":
		resp, err = s.importKeyPair(r.Form, reqID)
	case "DeleteKeyPair":
		resp, err = s.deleteKeyPair(r.Form, reqID)
	case "CreateSecurityGroup":
		resp, err = s.createSecurityGroup(r.Form, reqID)
	case "DeleteSecurityGroup":
		resp, err = s.deleteSecurityGroup(r.Form, reqID)
	case "AuthorizeSecurityGroupIngress":
		resp, err = s.authorizeIngress(r.Form, reqID)
	default:
		err = errf(400, "InvalidAction", "The action %s is not valid for this web service.", action)
	}
	if err != nil {
		s.writeError(w, reqID, err)
		return
	}
	b, mErr := xml.Marshal(resp)
	if mErr != nil {
		s.writeError(w, reqID, errf(500, "InternalError", "marshal %s response: %v", action, mErr))
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Write([]byte(xml.Header))
	w.Write(b)
}

func (s *Server) writeError(w http.ResponseWriter, reqID string, e *apiError) {
	b, _ := xml.Marshal(errorResponse{Errors: []xError{{Code: e.code, Message: e.message}}, RequestID: reqID})
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(e.status)
	w.Write([]byte(xml.Header))
	w.Write(b)
}

func (s *Server) newID(prefix string) string {
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	if prefix == "" {
		return fmt.Sprintf("5e1d%04x-0000-4000-8000-%012x", n&0xffff, n)
	}
	return fmt.Sprintf("%s-%017x", prefix, 0x0ab0000000000000+uint64(n))
}

// list returns the values of a flattened list parameter: prefix.1,
// prefix.2, ... in index order.
func list(f url.Values, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := f[prefix+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v[0])
	}
}

// count returns how many entries prefix.N.* there are.
func count(f url.Values, prefix string) int {
	n := 0
	for k := range f {
		if !strings.HasPrefix(k, prefix+".") {
			continue
		}
		rest := strings.TrimPrefix(k, prefix+".")
		if i := strings.IndexByte(rest, '.'); i >= 0 {
			rest = rest[:i]
		}
		if i, err := strconv.Atoi(rest); err == nil && i > n {
			n = i
		}
	}
	return n
}

type filter struct {
	name   string
	values []string
}

func filters(f url.Values) []filter {
	var out []filter
	for i := 1; i <= count(f, "Filter"); i++ {
		p := "Filter." + strconv.Itoa(i)
		out = append(out, filter{name: f.Get(p + ".Name"), values: list(f, p+".Value")})
	}
	return out
}

// match is EC2's filter value matching: * and ? are wildcards.
func match(pattern, v string) bool {
	ok, err := path.Match(pattern, v)
	return err == nil && ok
}

func matchAny(patterns []string, v string) bool {
	for _, p := range patterns {
		if match(p, v) {
			return true
		}
	}
	return false
}

func copyTags(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func xtags(m map[string]string) []xTag {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []xTag
	for _, k := range keys {
		out = append(out, xTag{Key: k, Value: m[k]})
	}
	return out
}

// --- instances -------------------------------------------------------------

var deadManRE = regexp.MustCompile(`(?m)(?:--on-active=(\d+)s?\b|shutdown\s+-[hPH]\s+\+(\d+)\b)`)

// parseDeadMan finds the power-off schedule in user data: a systemd-run
// --on-active=SECONDS timer, else shutdown -P +MINUTES.
func parseDeadMan(userData string) time.Duration {
	m := deadManRE.FindStringSubmatch(userData)
	if m == nil {
		return 0
	}
	if m[1] != "" {
		n, _ := strconv.Atoi(m[1])
		return time.Duration(n) * time.Second
	}
	n, _ := strconv.Atoi(m[2])
	return time.Duration(n) * time.Minute
}

func (s *Server) runInstances(f url.Values, reqID string) (any, *apiError) {
	s.mu.Lock()
	s.lastRunParams = f
	failAfter := s.failAfterRun > 0
	if failAfter {
		s.failAfterRun--
	}
	token := f.Get("ClientToken")
	if res, ok := s.tokens[token]; ok && token != "" {
		// Idempotency: the same token answers with the same reservation
		// and launches nothing.
		out := s.reservationLocked(res, reqID)
		s.mu.Unlock()
		if failAfter {
			return nil, errf(500, "InternalError", "An internal error has occurred")
		}
		return runInstancesResponse{Xmlns: xmlns, RequestID: reqID, xReservation: out}, nil
	}
	s.mu.Unlock()

	image := f.Get("ImageId")
	typ := f.Get("InstanceType")
	if image == "" {
		return nil, errf(400, "MissingParameter", "The request must contain the parameter ImageId")
	}
	if !s.imageKnown(image) {
		return nil, errf(400, "InvalidAMIID.NotFound", "The image id '[%s]' does not exist", image)
	}
	if typ == "" {
		typ = "m1.small"
	}
	if _, ok := instanceTypes[typ]; !ok {
		return nil, errf(400, "InvalidParameterValue", "Invalid value '%s' for InstanceType.", typ)
	}
	if min, max := f.Get("MinCount"), f.Get("MaxCount"); min != "1" || max != "1" {
		return nil, errf(400, "InvalidParameterValue", "this simulator launches exactly one instance (MinCount=%s MaxCount=%s)", min, max)
	}
	zone := f.Get("Placement.AvailabilityZone")
	if zone == "" {
		zone = s.opts.Zones[0]
	}
	known := false
	for _, z := range s.opts.Zones {
		known = known || z == zone
	}
	if !known {
		return nil, errf(400, "InvalidParameterValue", "Invalid availability zone: [%s]", zone)
	}
	keyName := f.Get("KeyName")
	s.mu.Lock()
	key, keyOK := s.keys[keyName]
	capErr := s.capacity[zone]
	unsup := s.unsupported[typ+"/"+zone]
	var others []string
	for _, z := range s.opts.Zones {
		if z != zone && !s.unsupported[typ+"/"+z] {
			others = append(others, z)
		}
	}
	s.mu.Unlock()
	if keyName != "" && !keyOK {
		return nil, errf(400, "InvalidKeyPair.NotFound", "The key pair '%s' does not exist", keyName)
	}
	if unsup {
		return nil, errf(400, "Unsupported", "Your requested instance type (%s) is not supported in your requested Availability Zone (%s). Please retry your request by not specifying an Availability Zone or choosing %s.", typ, zone, strings.Join(others, ", "))
	}
	if capErr {
		return nil, errf(500, "InsufficientInstanceCapacity", "We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). Our system will be working on provisioning additional capacity. You can currently get %s capacity by not specifying an Availability Zone in your request or choosing %s.", typ, zone, typ, strings.Join(s.opts.Zones, ", "))
	}
	var groups []string
	groups = append(groups, list(f, "SecurityGroupId")...)
	s.mu.Lock()
	for _, g := range groups {
		if _, ok := s.groups[g]; !ok {
			s.mu.Unlock()
			return nil, errf(400, "InvalidGroup.NotFound", "The security group '%s' does not exist", g)
		}
	}
	s.mu.Unlock()

	userData := ""
	if ud := f.Get("UserData"); ud != "" {
		b, err := base64.StdEncoding.DecodeString(ud)
		if err != nil {
			return nil, errf(400, "InvalidParameterValue", "Invalid BASE64 encoding of user data.")
		}
		userData = string(b)
	}
	behavior := f.Get("InstanceInitiatedShutdownBehavior")
	if behavior == "" {
		behavior = "stop"
	}
	if behavior != "stop" && behavior != "terminate" {
		return nil, errf(400, "InvalidParameterValue", "Value (%s) for parameter instanceInitiatedShutdownBehavior is invalid.", behavior)
	}
	tags := map[string]string{}
	for i := 1; i <= count(f, "TagSpecification"); i++ {
		p := "TagSpecification." + strconv.Itoa(i)
		if rt := f.Get(p + ".ResourceType"); rt != "instance" {
			continue
		}
		for j := 1; j <= count(f, p+".Tag"); j++ {
			q := p + ".Tag." + strconv.Itoa(j)
			tags[f.Get(q+".Key")] = f.Get(q + ".Value")
		}
	}
	rootSize, _ := strconv.Atoi(f.Get("BlockDeviceMapping.1.Ebs.VolumeSize"))
	in := &instance{
		id: s.newID("i"), reservation: s.newID("r"), imageID: image, typ: typ, zone: zone,
		keyName: keyName, subnet: f.Get("SubnetId"), token: token, groups: groups,
		state: Pending, launched: time.Now().UTC(), tags: tags, shutdownBehavior: behavior,
		rootSize: rootSize, rootType: f.Get("BlockDeviceMapping.1.Ebs.VolumeType"),
		deadMan: parseDeadMan(userData),
	}
	if in.subnet == "" {
		in.subnet = "subnet-0sim" + zone[len(zone)-1:]
	}

	// The instance is a real host from the start: its address exists
	// while it is pending, as an EC2 instance's private IP does.
	s.mu.Lock()
	noSSH := s.noSSH > 0
	if noSSH {
		s.noSSH--
	}
	s.mu.Unlock()
	var hopts []testhost.Option
	if noSSH {
		hopts = append(hopts, testhost.WithoutSSHD())
	} else if keyOK {
		hopts = append(hopts, testhost.WithAuthorizedKey(key.line))
	}
	h, htb, err := newHost(s.t, hopts...)
	if err != nil {
		return nil, errf(500, "InternalError", "An internal error has occurred (test host: %v)", err)
	}
	in.host, in.hostTB = h, htb

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		htb.teardown()
		return nil, errf(503, "Unavailable", "The service is unavailable.")
	}
	s.instances[in.id] = in
	s.order = append(s.order, in.id)
	if token != "" {
		s.tokens[token] = in.reservation
	}
	if s.failBoot > 0 {
		s.failBoot--
		in.timers = append(in.timers, time.AfterFunc(s.opts.PendingDelay, func() { s.bootFailed(in.id) }))
	} else {
		in.timers = append(in.timers, time.AfterFunc(s.opts.PendingDelay, func() { s.transition(in.id, Pending, Running, nil) }))
	}
	if in.deadMan > 0 {
		in.timers = append(in.timers, time.AfterFunc(in.deadMan, func() { s.instanceShutdown(in.id) }))
	}
	out := s.reservationLocked(in.reservation, reqID)
	s.mu.Unlock()
	if failAfter {
		return nil, errf(500, "InternalError", "An internal error has occurred")
	}
	return runInstancesResponse{Xmlns: xmlns, RequestID: reqID, xReservation: out}, nil
}

func (s *Server) imageKnown(id string) bool {
	for _, im := range s.opts.Images {
		if im.ID == id {
			return true
		}
	}
	return false
}

// transition moves an instance from one state to the next if it is still
// in from.
func (s *Server) transition(id, from, to string, reason *xStateReason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.instances[id]
	if in == nil || in.state != from || s.closed {
		return
	}
	in.state = to
	if reason != nil {
		in.stateReason = reason
	}
}

func (s *Server) bootFailed(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.instances[id]
	if in == nil || in.state != Pending || s.closed {
		return
	}
	in.stateReason = &xStateReason{Code: "Server.InternalError", Message: "Server.InternalError: Internal error on launch"}
	s.beginTerminateLocked(in)
}

// instanceShutdown is the user data's power-off firing: the OS halts, and
// EC2 applies InstanceInitiatedShutdownBehavior.
func (s *Server) instanceShutdown(id string) {
	s.mu.Lock()
	in := s.instances[id]
	if in == nil || (in.state != Running && in.state != Pending) || s.closed {
		s.mu.Unlock()
		return
	}
	reason := &xStateReason{Code: "Client.InstanceInitiatedShutdown", Message: "Client.InstanceInitiatedShutdown: Instance initiated shutdown"}
	in.stateReason = reason
	in.reason = "User initiated (" + time.Now().UTC().Format("2006-01-02 15:04:05 MST") + ")"
	if in.shutdownBehavior == "terminate" {
		s.beginTerminateLocked(in)
	} else {
		in.state = Stopping
		in.timers = append(in.timers, time.AfterFunc(s.opts.StoppingDelay, func() {
			if !s.enter() {
				return
			}
			defer s.wg.Done()
			in.hostTB.teardown()
			s.transition(id, Stopping, Stopped, nil)
		}))
	}
	s.mu.Unlock()
}

// beginTerminateLocked moves in to shutting-down and schedules the host's
// teardown followed by terminated, so that a terminated instance's test
// host is always gone.
func (s *Server) beginTerminateLocked(in *instance) {
	for _, tm := range in.timers {
		tm.Stop()
	}
	delay := s.opts.ShuttingDownDelay
	if s.slowTerm > 0 {
		delay = s.slowTerm
	}
	wasStopped := in.state == Stopped
	in.state = ShuttingDown
	if in.stateReason == nil {
		in.stateReason = &xStateReason{Code: "Client.UserInitiatedShutdown", Message: "Client.UserInitiatedShutdown: User initiated shutdown"}
	}
	if wasStopped {
		delay = 0
	}
	in.timers = []*time.Timer{time.AfterFunc(delay, func() {
		if !s.enter() {
			return
		}
		defer s.wg.Done()
		in.hostTB.teardown()
		s.mu.Lock()
		in.state = Terminated
		in.terminatedAt = time.Now()
		s.mu.Unlock()
	})}
}

// enter registers a timer callback that is about to tear a host down, so
// close waits for it; it reports false once the server is closing (close
// then tears the host down itself).
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *Server) visibleLocked(in *instance) bool {
	return in.state != Terminated || time.Since(in.terminatedAt) < s.opts.TerminatedVisibleFor
}

func (s *Server) xinstanceLocked(in *instance) xInstance {
	x := xInstance{
		InstanceID: in.id, ImageID: in.imageID, InstanceType: in.typ, KeyName: in.keyName,
		State:       xState{Code: stateCodes[in.state], Name: in.state},
		LaunchTime:  in.launched.Format("2006-01-02T15:04:05.000Z"),
		Placement:   xPlacement{AvailabilityZone: in.zone, Tenancy: "default"},
		Reason:      in.reason,
		StateReason: in.stateReason, Architecture: "x86_64", RootDeviceType: "ebs",
		RootDeviceName: "/dev/xvda", VirtualizationType: "hvm", ClientToken: in.token,
		TagSet: xtags(in.tags),
	}
	if in.state != Terminated {
		x.SubnetID, x.VpcID = in.subnet, "vpc-0sim"
		if in.host != nil {
			x.PrivateIPAddress = in.host.Addr
			x.PrivateDNSName = "ip-" + strings.ReplaceAll(in.host.Addr, ".", "-") + "." + s.opts.Region + ".compute.internal"
			if in.state == Running {
				// Running instances in a public subnet have a public
				// address; here it is the same test-host address.
				x.IPAddress = in.host.Addr
			}
		}
		for _, g := range in.groups {
			x.GroupSet = append(x.GroupSet, xGroup{GroupID: g, GroupName: s.groups[g].name})
		}
		x.BlockDeviceMapping = []xBlockDevice{{DeviceName: "/dev/xvda", Ebs: xEbs{
			VolumeID: "vol-" + strings.TrimPrefix(in.id, "i-"), Status: "attached",
			AttachTime: x.LaunchTime, DeleteOnTermination: true}}}
	}
	return x
}

func (s *Server) reservationLocked(res, reqID string) xReservation {
	out := xReservation{ReservationID: res, OwnerID: s.opts.OwnerID}
	for _, id := range s.order {
		in := s.instances[id]
		if in.reservation == res {
			out.Instances = append(out.Instances, s.xinstanceLocked(in))
		}
	}
	return out
}

func (s *Server) instanceMatches(in *instance, fs []filter) bool {
	for _, f := range fs {
		var v string
		switch {
		case f.name == "instance-state-name":
			v = in.state
		case f.name == "instance-id":
			v = in.id
		case f.name == "instance-type":
			v = in.typ
		case f.name == "client-token":
			v = in.token
		case f.name == "availability-zone":
			v = in.zone
		case f.name == "key-name":
			v = in.keyName
		case f.name == "tag-key":
			ok := false
			for k := range in.tags {
				ok = ok || matchAny(f.values, k)
			}
			if !ok {
				return false
			}
			continue
		case strings.HasPrefix(f.name, "tag:"):
			tv, ok := in.tags[strings.TrimPrefix(f.name, "tag:")]
			if !ok {
				return false
			}
			v = tv
		default:
			// EC2 rejects unknown filter names; so does this server, so
			// a typo in a filter fails loudly instead of matching all.
			return false
		}
		if !matchAny(f.values, v) {
			return false
		}
	}
	return true
}

var knownInstanceFilters = map[string]bool{"instance-state-name": true, "instance-id": true, "instance-type": true,
	"client-token": true, "availability-zone": true, "key-name": true, "tag-key": true}

func (s *Server) describeInstances(f url.Values, reqID string) (any, *apiError) {
	ids := list(f, "InstanceId")
	fs := filters(f)
	for _, fl := range fs {
		if !knownInstanceFilters[fl.name] && !strings.HasPrefix(fl.name, "tag:") {
			return nil, errf(400, "InvalidParameterValue", "The filter '%s' is invalid", fl.name)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var missing []string
	for _, id := range ids {
		if !strings.HasPrefix(id, "i-") {
			return nil, errf(400, "InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
		}
		if in, ok := s.instances[id]; !ok || !s.visibleLocked(in) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, errf(400, "InvalidInstanceID.NotFound", "The instance IDs '%s' do not exist", strings.Join(missing, ", "))
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	resp := describeInstancesResponse{Xmlns: xmlns, RequestID: reqID}
	byRes := map[string]int{}
	for _, id := range s.order {
		in := s.instances[id]
		if !s.visibleLocked(in) || (len(ids) > 0 && !want[id]) || !s.instanceMatches(in, fs) {
			continue
		}
		i, ok := byRes[in.reservation]
		if !ok {
			i = len(resp.Reservations)
			byRes[in.reservation] = i
			resp.Reservations = append(resp.Reservations, xReservation{ReservationID: in.reservation, OwnerID: s.opts.OwnerID})
		}
		resp.Reservations[i].Instances = append(resp.Reservations[i].Instances, s.xinstanceLocked(in))
	}
	return resp, nil
}

func (s *Server) terminateInstances(f url.Values, reqID string) (any, *apiError) {
	ids := list(f, "InstanceId")
	if len(ids) == 0 {
		return nil, errf(400, "MissingParameter", "The request must contain the parameter InstanceId")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if in, ok := s.instances[id]; !ok || !s.visibleLocked(in) {
			return nil, errf(400, "InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		}
	}
	resp := terminateInstancesResponse{Xmlns: xmlns, RequestID: reqID}
	for _, id := range ids {
		in := s.instances[id]
		prev := in.state
		switch in.state {
		case Pending, Running, Stopping, Stopped:
			in.stateReason = nil
			s.beginTerminateLocked(in)
		}
		resp.Instances = append(resp.Instances, xStateChange{InstanceID: id,
			CurrentState:  xState{Code: stateCodes[in.state], Name: in.state},
			PreviousState: xState{Code: stateCodes[prev], Name: prev}})
	}
	return resp, nil
}

func (s *Server) createTags(f url.Values, reqID string) (any, *apiError) {
	ids := list(f, "ResourceId")
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if _, ok := s.instances[id]; !ok {
			return nil, errf(400, "InvalidID", "The ID '%s' is not valid", id)
		}
	}
	for _, id := range ids {
		for j := 1; j <= count(f, "Tag"); j++ {
			q := "Tag." + strconv.Itoa(j)
			s.instances[id].tags[f.Get(q+".Key")] = f.Get(q + ".Value")
		}
	}
	return returnResponse{XMLName: xml.Name{Local: "CreateTagsResponse"}, Xmlns: xmlns, RequestID: reqID, Return: true}, nil
}

func (s *Server) describeInstanceTypes(f url.Values, reqID string) (any, *apiError) {
	names := list(f, "InstanceType")
	resp := describeInstanceTypesResponse{Xmlns: xmlns, RequestID: reqID}
	if len(names) == 0 {
		for n := range instanceTypes {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	for _, n := range names {
		it, ok := instanceTypes[n]
		if !ok {
			return nil, errf(400, "InvalidInstanceType", "The following supplied instance types do not exist: [%s]", n)
		}
		resp.Types = append(resp.Types, it)
	}
	return resp, nil
}

func (s *Server) describeImages(f url.Values, reqID string) (any, *apiError) {
	owners := list(f, "Owner")
	ids := list(f, "ImageId")
	fs := filters(f)
	resp := describeImagesResponse{Xmlns: xmlns, RequestID: reqID}
	for _, im := range s.opts.Images {
		if len(owners) > 0 && !matchAny(owners, im.OwnerID) && !(contains(owners, "self") && im.OwnerID == s.opts.OwnerID) {
			continue
		}
		if len(ids) > 0 && !contains(ids, im.ID) {
			continue
		}
		ok := true
		for _, fl := range fs {
			switch fl.name {
			case "name":
				ok = ok && matchAny(fl.values, im.Name)
			case "architecture":
				ok = ok && matchAny(fl.values, im.Architecture)
			case "state":
				ok = ok && matchAny(fl.values, "available")
			case "owner-id":
				ok = ok && matchAny(fl.values, im.OwnerID)
			case "image-id":
				ok = ok && matchAny(fl.values, im.ID)
			default:
				return nil, errf(400, "InvalidParameterValue", "The filter '%s' is invalid", fl.name)
			}
		}
		if !ok {
			continue
		}
		resp.Images = append(resp.Images, xImage{ImageID: im.ID, ImageLocation: im.OwnerID + "/" + im.Name,
			ImageState: "available", ImageOwnerID: im.OwnerID, CreationDate: im.Created.UTC().Format("2006-01-02T15:04:05.000Z"),
			IsPublic: true, Architecture: im.Architecture, ImageType: "machine", Name: im.Name,
			RootDeviceType: "ebs", RootDeviceName: "/dev/xvda", VirtualizationType: "hvm", EnaSupport: true})
	}
	return resp, nil
}

func contains(l []string, v string) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

func (s *Server) importKeyPair(f url.Values, reqID string) (any, *apiError) {
	name := f.Get("KeyName")
	if name == "" {
		return nil, errf(400, "MissingParameter", "The request must contain the parameter KeyName")
	}
	// The SDK base64-encodes the PublicKeyMaterial blob on the wire.
	raw, err := base64.StdEncoding.DecodeString(f.Get("PublicKeyMaterial"))
	if err != nil {
		return nil, errf(400, "InvalidKey.Format", "Key is not in valid OpenSSH public key format")
	}
	pk, _, _, _, err := ssh.ParseAuthorizedKey(raw)
	if err != nil {
		return nil, errf(400, "InvalidKey.Format", "Key is not in valid OpenSSH public key format")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[name]; ok {
		return nil, errf(400, "InvalidKeyPair.Duplicate", "The keypair already exists")
	}
	kp := keyPair{name: name, line: strings.TrimSpace(string(raw)), fingerprint: ssh.FingerprintSHA256(pk)}
	s.seq++
	kp.id = fmt.Sprintf("key-%017x", 0x0ce0000000000000+uint64(s.seq))
	s.keys[name] = kp
	return importKeyPairResponse{Xmlns: xmlns, RequestID: reqID, KeyFingerprint: kp.fingerprint, KeyName: name, KeyPairID: kp.id}, nil
}

func (s *Server) deleteKeyPair(f url.Values, reqID string) (any, *apiError) {
	name, id := f.Get("KeyName"), f.Get("KeyPairId")
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone string
	for n, kp := range s.keys {
		if (name != "" && n == name) || (id != "" && kp.id == id) {
			gone = kp.id
			delete(s.keys, n)
		}
	}
	// EC2 answers true for a key pair that does not exist.
	return returnResponse{XMLName: xml.Name{Local: "DeleteKeyPairResponse"}, Xmlns: xmlns, RequestID: reqID, Return: true, KeyPairID: gone}, nil
}

// KeyPairs lists the names of the imported key pairs.
func (s *Server) KeyPairs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.keys {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// SecurityGroups lists the security groups as "id name rule,rule".
func (s *Server) SecurityGroups() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for id, g := range s.groups {
		out[id] = append([]string(nil), g.ingress...)
	}
	return out
}

func (s *Server) createSecurityGroup(f url.Values, reqID string) (any, *apiError) {
	name, desc := f.Get("GroupName"), f.Get("GroupDescription")
	if name == "" || desc == "" {
		return nil, errf(400, "MissingParameter", "The request must contain the parameters GroupName and GroupDescription")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.groups {
		if g.name == name {
			return nil, errf(400, "InvalidGroup.Duplicate", "The security group '%s' already exists for VPC '%s'", name, g.vpc)
		}
	}
	s.seq++
	g := &group{id: fmt.Sprintf("sg-%017x", 0x05e0000000000000+uint64(s.seq)), name: name, desc: desc, vpc: f.Get("VpcId")}
	s.groups[g.id] = g
	return createSecurityGroupResponse{Xmlns: xmlns, RequestID: reqID, Return: true, GroupID: g.id}, nil
}

func (s *Server) deleteSecurityGroup(f url.Values, reqID string) (any, *apiError) {
	id := f.Get("GroupId")
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[id]
	if !ok {
		return nil, errf(400, "InvalidGroup.NotFound", "The security group '%s' does not exist", id)
	}
	// As on EC2, a group still attached to an instance that has not
	// finished terminating cannot be deleted yet.
	for _, in := range s.instances {
		if in.state != Terminated && contains(in.groups, id) {
			return nil, errf(400, "DependencyViolation", "resource %s has a dependent object", g.id)
		}
	}
	delete(s.groups, id)
	return returnResponse{XMLName: xml.Name{Local: "DeleteSecurityGroupResponse"}, Xmlns: xmlns, RequestID: reqID, Return: true, GroupID: id}, nil
}

func (s *Server) authorizeIngress(f url.Values, reqID string) (any, *apiError) {
	id := f.Get("GroupId")
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[id]
	if !ok {
		return nil, errf(400, "InvalidGroup.NotFound", "The security group '%s' does not exist", id)
	}
	n := count(f, "IpPermissions")
	if n == 0 {
		return nil, errf(400, "MissingParameter", "The request must contain the parameter IpPermissions")
	}
	for i := 1; i <= n; i++ {
		p := "IpPermissions." + strconv.Itoa(i)
		for j := 1; j <= count(f, p+".IpRanges"); j++ {
			rule := fmt.Sprintf("%s:%s-%s:%s", f.Get(p+".IpProtocol"), f.Get(p+".FromPort"), f.Get(p+".ToPort"), f.Get(p+".IpRanges."+strconv.Itoa(j)+".CidrIp"))
			if contains(g.ingress, rule) {
				return nil, errf(400, "InvalidPermission.Duplicate", "the specified rule \"peer: %s\" already exists", rule)
			}
			g.ingress = append(g.ingress, rule)
		}
	}
	return returnResponse{XMLName: xml.Name{Local: "AuthorizeSecurityGroupIngressResponse"}, Xmlns: xmlns, RequestID: reqID, Return: true}, nil
}

// --- test hosts from a server goroutine -----------------------------------

// hostTB lets testhost.New run outside the test goroutine: failures and
// skips become an error instead of ending the test, and cleanups are kept
// so the simulator tears the host down when the instance terminates.
type hostTB struct {
	testing.TB
	mu       sync.Mutex
	err      error
	cleanups []func()
	done     bool
}

func (h *hostTB) fail(msg string) {
	h.mu.Lock()
	if h.err == nil {
		h.err = fmt.Errorf("%s", msg)
	}
	h.mu.Unlock()
	runtime.Goexit()
}

func (h *hostTB) Helper()                         {}
func (h *hostTB) Fatalf(format string, a ...any)  { h.fail(fmt.Sprintf(format, a...)) }
func (h *hostTB) Fatal(a ...any)                  { h.fail(fmt.Sprint(a...)) }
func (h *hostTB) FailNow()                        { h.fail("test host setup failed") }
func (h *hostTB) Skipf(format string, a ...any)   { h.fail(fmt.Sprintf(format, a...)) }
func (h *hostTB) Skip(a ...any)                   { h.fail(fmt.Sprint(a...)) }
func (h *hostTB) SkipNow()                        { h.fail("test host skipped") }
func (h *hostTB) Errorf(format string, a ...any)  { h.TB.Logf("ec2sim test host: "+format, a...) }
func (h *hostTB) Error(a ...any)                  { h.TB.Log(append([]any{"ec2sim test host:"}, a...)...) }
func (h *hostTB) Cleanup(f func())                { h.mu.Lock(); h.cleanups = append(h.cleanups, f); h.mu.Unlock() }
func (h *hostTB) Logf(format string, args ...any) { h.TB.Logf(format, args...) }

// TempDir gives a directory removed with the host rather than at the end
// of the test, so the sshd's files outlive it no longer than it does.
func (h *hostTB) TempDir() string {
	d, err := mkdirTemp()
	if err != nil {
		h.fail(err.Error())
	}
	h.Cleanup(func() { removeAll(d) })
	return d
}

// teardown runs the host's cleanups once, newest first.
func (h *hostTB) teardown() {
	if h == nil {
		return
	}
	h.mu.Lock()
	if h.done {
		h.mu.Unlock()
		return
	}
	h.done = true
	cs := h.cleanups
	h.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

func newHost(t testing.TB, opts ...testhost.Option) (*testhost.Host, *hostTB, error) {
	htb := &hostTB{TB: t}
	var h *testhost.Host
	done := make(chan struct{})
	go func() {
		defer close(done)
		h = testhost.New(htb, opts...)
	}()
	<-done
	if htb.err != nil {
		htb.teardown()
		return nil, nil, htb.err
	}
	return h, htb, nil
}

func mkdirTemp() (string, error) { return os.MkdirTemp("", "ec2sim-host-") }

func removeAll(d string) { os.RemoveAll(d) }
