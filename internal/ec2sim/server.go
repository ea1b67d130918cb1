// Package ec2sim is a test-only EC2 endpoint: an HTTP server on loopback
// speaking EC2's Query API (form-encoded requests, XML responses and XML
// errors with EC2's element names) for the calls the pgbench provider makes.
// A real aws-sdk-go-v2 ec2.Client is pointed at it with BaseEndpoint. Every
// instance that is launched is a real test host (a network namespace
// running sshd, see internal/testhost) that admits the launch's key pair,
// and terminating the instance tears that host down. The same URL answers
// STS's AssumeRole and GetCallerIdentity (see sts.go) and Service Quotas'
// GetServiceQuota (servicequotas.go), and the server records which access
// key signed each request.
package ec2sim

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

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
	// VCPUQuota is the account's "Running On-Demand Standard (A, C, D,
	// H, I, M, R, T, Z) instances" quota (L-1216C47A) in vCPUs (default
	// DefaultVCPUQuota; new AWS accounts often have 5 to 64).
	VCPUQuota int
	// ConsoleDelay is how long after running GetConsoleOutput stays
	// empty before it shows the boot log (EC2: minutes; default 300ms).
	ConsoleDelay time.Duration
}

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
	// placementGroups are the placement groups, by name.
	placementGroups map[string]*placementGroup
	calls           map[string]int
	signers         map[string][]string // action -> access key id of each request
	sts             stsState
	wg              sync.WaitGroup
	closed          bool

	// fault injection, guarded by mu
	capacity      map[string]bool // zone -> InsufficientInstanceCapacity
	unsupported   map[string]bool // "type/zone" -> Unsupported
	throttle      int
	noSSH         int
	slowSSH       int
	slowSSHAfter  time.Duration
	slowTerm      time.Duration
	failAfterRun  int
	failBoot      int
	denied        map[string]bool // action -> UnauthorizedOperation
	consoleSilent int
	consoleForged int
	lastRunParams url.Values
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
	def(&opts.ConsoleDelay, 300*time.Millisecond)
	if opts.Images == nil {
		opts.Images = defaultImages()
	}
	if opts.VCPUQuota == 0 {
		opts.VCPUQuota = DefaultVCPUQuota
	}
	s := &Server{
		t: t, opts: opts,
		instances:       map[string]*instance{},
		tokens:          map[string]string{},
		keys:            map[string]keyPair{},
		groups:          map[string]*group{},
		placementGroups: map[string]*placementGroup{},
		calls:           map[string]int{},
		signers:         map[string][]string{},
		capacity:        map[string]bool{},
		unsupported:     map[string]bool{},
		denied:          map[string]bool{},
	}
	s.http = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.http.URL
	t.Cleanup(s.close)
	return s
}

// Region is the simulated region's name.
func (s *Server) Region() string { return s.opts.Region }

// Calls reports how many requests of an action (e.g. "RunInstances") the
// server received, throttled ones included.
func (s *Server) Calls(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[action]
}

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

// apiError is an EC2 error answer: HTTP status, code and message.
type apiError struct {
	status        int
	code, message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

// errf builds an apiError with a formatted message.
func errf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// actions are the EC2 calls this server answers, by Action parameter.
var actions = map[string]func(s *Server, f url.Values, reqID string) (any, *apiError){
	"RunInstances":                  (*Server).runInstances,
	"DescribeInstances":             (*Server).describeInstances,
	"TerminateInstances":            (*Server).terminateInstances,
	"CreateTags":                    (*Server).createTags,
	"DeleteTags":                    (*Server).deleteTags,
	"DescribeVolumes":               (*Server).describeVolumes,
	"DescribeInstanceTypes":         (*Server).describeInstanceTypes,
	"DescribeImages":                (*Server).describeImages,
	"ImportKeyPair":                 (*Server).importKeyPair,
	"DeleteKeyPair":                 (*Server).deleteKeyPair,
	"CreateSecurityGroup":           (*Server).createSecurityGroup,
	"DeleteSecurityGroup":           (*Server).deleteSecurityGroup,
	"DescribeSecurityGroups":        (*Server).describeSecurityGroups,
	"AuthorizeSecurityGroupIngress": (*Server).authorizeIngress,
	"CreatePlacementGroup":          (*Server).createPlacementGroup,
	"DeletePlacementGroup":          (*Server).deletePlacementGroup,
	"DescribePlacementGroups":       (*Server).describePlacementGroups,
	"GetConsoleOutput":              (*Server).getConsoleOutput,
}

// serve checks a request as EC2 would (throttling, signature, API
// version) and dispatches it to its action.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	reqID := s.newID("")
	if err := r.ParseForm(); err != nil {
		s.writeError(w, reqID, errf(400, "MalformedQueryString", "%v", err))
		return
	}
	action := r.Form.Get("Action")
	scope, signed := parseAuthorization(r.Header.Get("Authorization"))
	sq := isServiceQuotas(scope, signed, r)
	if sq {
		action = sqOperation(r)
	}
	s.mu.Lock()
	s.calls[action]++
	s.signers[action] = append(s.signers[action], scope.accessKeyID)
	s.mu.Unlock()
	if sq {
		s.serveServiceQuotas(w, r, reqID, scope, signed)
		return
	}
	if isSTS(scope, signed, r.Form) {
		s.serveSTS(w, r, reqID, scope, signed)
		return
	}
	s.mu.Lock()
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
	// Temporary credentials without their session token are refused too.
	if !signed || scope.region != s.opts.Region || scope.service != "ec2" ||
		s.badSessionToken(scope.accessKeyID, r.Header.Get("X-Amz-Security-Token")) {
		s.writeError(w, reqID, errf(401, "AuthFailure", "AWS was not able to validate the provided access credentials"))
		return
	}
	if v := r.Form.Get("Version"); v != "2016-11-15" {
		s.writeError(w, reqID, errf(400, "InvalidParameterValue", "Invalid API version %q", v))
		return
	}
	handle, ok := actions[action]
	if !ok {
		s.writeError(w, reqID, errf(400, "InvalidAction", "The action %s is not valid for this web service.", action))
		return
	}
	// IAM decides before EC2 looks at the request, DryRun or not.
	s.mu.Lock()
	denied := s.deniedLocked(action)
	s.mu.Unlock()
	if denied {
		s.writeError(w, reqID, s.unauthorized(action, r.Form))
		return
	}
	resp, err := handle(s, r.Form, reqID)
	if err != nil {
		s.writeError(w, reqID, err)
		return
	}
	b, mErr := xml.Marshal(resp)
	if mErr != nil {
		s.writeError(w, reqID, errf(500, "InternalError", "marshal %s response: %v", action, mErr))
		return
	}
	writeXML(w, http.StatusOK, b)
}

func (s *Server) writeError(w http.ResponseWriter, reqID string, e *apiError) {
	// An error document of two strings always marshals.
	b, _ := xml.Marshal(errorResponse{Errors: []xError{{Code: e.code, Message: e.message}}, RequestID: reqID})
	writeXML(w, e.status, b)
}

// writeXML sends an XML document as EC2 does.
func writeXML(w http.ResponseWriter, status int, doc []byte) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	w.Write([]byte(xml.Header))
	w.Write(doc)
}

// newID returns a request id for an empty prefix, else a resource id
// such as i-0ab0000000000001.
func (s *Server) newID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if prefix == "" {
		s.seq++
		return fmt.Sprintf("5e1d%04x-0000-4000-8000-%012x", s.seq&0xffff, s.seq)
	}
	return s.newIDLocked(prefix, 0x0ab0000000000000)
}

// newIDLocked returns prefix-<17 hex digits>, base plus the next sequence
// number; base keeps the kinds of id apart at a glance.
func (s *Server) newIDLocked(prefix string, base uint64) string {
	s.seq++
	return fmt.Sprintf("%s-%017x", prefix, base+uint64(s.seq))
}
