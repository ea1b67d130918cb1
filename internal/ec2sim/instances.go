package ec2sim

import (
	"encoding/base64"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

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

// xstate is a state as EC2 writes it, code and name.
func xstate(name string) xState { return xState{Code: stateCodes[name], Name: name} }

// instance is one launched instance; its fields are guarded by Server.mu.
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
	host                                                        *testhost.Host
	hostTB                                                      *hostTB
	timers                                                      []*time.Timer
	powerOff                                                    powerOff  // from user data
	powerOffAt                                                  time.Time // once user data ran
	rootDevice                                                  string
	volumes                                                     []Volume
	console                                                     consoleKeys
	metadata                                                    MetadataOptions
	sshAfter                                                    time.Duration // sshd starts this long after launch (SlowSSH)
	placementGroup                                              string        // the placement group's name, if any
}

// MetadataOptions are an instance's instance metadata service settings,
// as RunInstances' MetadataOptions set them.
type MetadataOptions struct {
	// HTTPTokens is "required" (IMDSv2 only) or "optional" (EC2's
	// default for images that do not ask for IMDSv2).
	HTTPTokens string
	// HopLimit is the PUT response hop limit, 1 by default.
	HopLimit int
}

// metadataOptions reads RunInstances' MetadataOptions as EC2 does,
// refusing values EC2 refuses.
func metadataOptions(f url.Values) (MetadataOptions, *apiError) {
	m := MetadataOptions{HTTPTokens: "optional", HopLimit: 1}
	switch t := f.Get("MetadataOptions.HttpTokens"); t {
	case "":
	case "optional", "required":
		m.HTTPTokens = t
	default:
		return m, errf(400, "InvalidParameterValue", "Invalid value '%s' for MetadataOptions.HttpTokens", t)
	}
	if h := f.Get("MetadataOptions.HttpPutResponseHopLimit"); h != "" {
		n, err := strconv.Atoi(h)
		if err != nil || n < 1 || n > 64 {
			return m, errf(400, "InvalidParameterValue", "Invalid value '%s' for MetadataOptions.HttpPutResponseHopLimit", h)
		}
		m.HopLimit = n
	}
	return m, nil
}

// Volume is an EBS volume attached to an instance.
type Volume struct {
	// ID is the volume id (vol-...), given at launch.
	ID     string
	Device string
	SizeGB int
	Type   string
	// Encrypted is true for a volume encrypted at rest, with the KMS key
	// KMSKeyID (empty: the account's default EBS key).
	Encrypted bool
	KMSKeyID  string
	// Tags are the volume's tags: the launch's TagSpecifications of
	// resource type volume, then CreateTags and DeleteTags.
	Tags map[string]string
}

// blockDevices resolves a RunInstances' BlockDeviceMapping against the
// image as EC2 does: a mapping of the image's root device changes the root
// volume (never below the snapshot's size), any other device adds a volume.
func blockDevices(f url.Values, img Image) ([]Volume, *apiError) {
	vols := []Volume{{Device: img.rootDevice(), SizeGB: img.rootSize(), Type: "gp3"}}
	for i := 1; i <= count(f, "BlockDeviceMapping"); i++ {
		p := "BlockDeviceMapping." + strconv.Itoa(i)
		dev := f.Get(p + ".DeviceName")
		if dev == "" {
			return nil, errf(400, "MissingParameter", "The request must contain the parameter BlockDeviceMapping.%d.DeviceName", i)
		}
		v := Volume{Device: dev, Type: f.Get(p + ".Ebs.VolumeType"), Encrypted: f.Get(p+".Ebs.Encrypted") == "true",
			KMSKeyID: f.Get(p + ".Ebs.KmsKeyId")}
		if v.Type == "" {
			v.Type = "gp3"
		}
		if v.KMSKeyID != "" && !v.Encrypted {
			return nil, errf(400, "InvalidParameterDependency", "The parameter KmsKeyId requires the parameter Encrypted to be set.")
		}
		if sz := f.Get(p + ".Ebs.VolumeSize"); sz != "" {
			n, err := strconv.Atoi(sz)
			if err != nil || n < 1 {
				return nil, errf(400, "InvalidParameterValue", "Invalid value '%s' for BlockDeviceMapping.%d.Ebs.VolumeSize", sz, i)
			}
			v.SizeGB = n
		}
		if dev != img.rootDevice() {
			if v.SizeGB == 0 {
				return nil, errf(400, "InvalidBlockDeviceMapping", "The request must contain the parameter size or snapshotId for device %s", dev)
			}
			vols = append(vols, v)
			continue
		}
		if v.SizeGB == 0 {
			v.SizeGB = img.rootSize()
		}
		if v.SizeGB < img.rootSize() {
			return nil, errf(400, "InvalidBlockDeviceMapping", "Volume of size %dGB is smaller than snapshot '%s', expect size >= %dGB", v.SizeGB, img.snapshot(), img.rootSize())
		}
		vols[0] = v
	}
	return vols, nil
}

// InstanceInfo is the simulator's view of one instance, for assertions.
type InstanceInfo struct {
	ID, State, Zone, Type, KeyName string
	PlacementGroup                 string // its name, if any
	Tags                           map[string]string
	Host                           *testhost.Host // nil once torn down
	Namespace                      string
	DeadMan                        time.Duration
	ShutdownBehavior               string
	// RootDevice is the image's root device; Volumes are the attached
	// EBS volumes, the root volume first.
	RootDevice string
	Volumes    []Volume
	// Metadata is how the instance's metadata service answers.
	Metadata MetadataOptions
	// DeadMan above is the delay of a power-off the user data schedules
	// relative to when it runs (systemd-run --on-active=N, shutdown +M);
	// DeadManAt is the instant of one it schedules absolutely (the
	// script's epoch); PowerOffAt is when the power-off fires, known once
	// the user data ran (the instance entered running). Each is zero when
	// the user data schedules nothing the simulator understands.
	DeadManAt, PowerOffAt time.Time
}

// Instances lists every instance ever launched, terminated ones included.
func (s *Server) Instances() []InstanceInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []InstanceInfo
	for _, id := range s.order {
		in := s.instances[id]
		ii := InstanceInfo{ID: in.id, State: in.state, Zone: in.zone, Type: in.typ, KeyName: in.keyName,
			Tags: maps.Clone(in.tags), Host: in.host, DeadMan: in.powerOff.after, DeadManAt: in.powerOff.at,
			PowerOffAt: in.powerOffAt, ShutdownBehavior: in.shutdownBehavior,
			RootDevice: in.rootDevice, Volumes: cloneVolumes(in.volumes), Metadata: in.metadata, PlacementGroup: in.placementGroup}
		if in.host != nil {
			ii.Namespace = in.host.Namespace
		}
		out = append(out, ii)
	}
	return out
}

// cloneVolumes copies volumes with their tags, for a caller to keep.
func cloneVolumes(vols []Volume) []Volume {
	out := slices.Clone(vols)
	for i := range out {
		out[i].Tags = maps.Clone(out[i].Tags)
	}
	return out
}

// LastRunInstances returns the form parameters of the last RunInstances.
func (s *Server) LastRunInstances() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastRunParams
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

func (s *Server) runInstances(f url.Values, reqID string) (any, *apiError) {
	s.mu.Lock()
	s.lastRunParams = f
	// A DryRun creates nothing, so it neither loses an answer nor uses
	// up its client token.
	dry := dryRun(f)
	failAfter := s.failAfterRun > 0 && !dry
	if failAfter {
		s.failAfterRun--
	}
	token := f.Get("ClientToken")
	if res, ok := s.tokens[token]; ok && token != "" && !dry {
		// Idempotency: the same token answers with the same reservation
		// and launches nothing.
		out := s.reservationLocked(res)
		s.mu.Unlock()
		return runResponse(out, reqID, failAfter)
	}
	s.mu.Unlock()

	req, err := s.readLaunch(f)
	if err != nil {
		return nil, err
	}
	// A DryRun checks permissions and parameters, not what a launch
	// would allocate: the vCPU quota, capacity and a zone's offer are
	// only checked at launch.
	if dry {
		return nil, errDryRun()
	}
	if err := s.allocate(req); err != nil {
		return nil, err
	}
	in := req.instance(s, token)
	if err := s.startHost(in, req); err != nil {
		return nil, err
	}
	out, err := s.register(in, token)
	if err != nil {
		return nil, err
	}
	return runResponse(out, reqID, failAfter)
}

// launchRequest is a RunInstances request read and checked against what
// exists (image, key pair, groups, zone).
type launchRequest struct {
	image         Image
	typ, zone     string
	keyName       string
	key           keyPair
	keyOK         bool
	capacityShort bool     // the zone has no capacity now
	unsupported   bool     // the zone does not offer the type
	otherZones    []string // zones that do
	groups        []string
	subnet        string
	// placementGroup is Placement.GroupName.
	placementGroup string
	volumes        []Volume
	metadata       MetadataOptions
	userData       string
	behavior       string
	tags           map[string]string
	volumeTags     map[string]string // every volume the launch creates gets them
}

// readLaunch reads and checks a RunInstances request as EC2 does before
// it allocates anything, which is all a DryRun checks.
func (s *Server) readLaunch(f url.Values) (*launchRequest, *apiError) {
	image := f.Get("ImageId")
	if image == "" {
		return nil, errf(400, "MissingParameter", "The request must contain the parameter ImageId")
	}
	img, ok := s.image(image)
	if !ok {
		return nil, errf(400, "InvalidAMIID.NotFound", "The image id '[%s]' does not exist", image)
	}
	r := &launchRequest{image: img, typ: f.Get("InstanceType"), zone: f.Get("Placement.AvailabilityZone"),
		keyName: f.Get("KeyName"), groups: list(f, "SecurityGroupId"), subnet: f.Get("SubnetId"), placementGroup: f.Get("Placement.GroupName"),
		tags: specTags(f, "instance"), volumeTags: specTags(f, "volume")}
	var err *apiError
	if r.volumes, err = blockDevices(f, img); err != nil {
		return nil, err
	}
	if r.metadata, err = metadataOptions(f); err != nil {
		return nil, err
	}
	if r.typ == "" {
		r.typ = "m1.small"
	}
	if _, ok := instanceTypes[r.typ]; !ok {
		return nil, errf(400, "InvalidParameterValue", "Invalid value '%s' for InstanceType.", r.typ)
	}
	if min, max := f.Get("MinCount"), f.Get("MaxCount"); min != "1" || max != "1" {
		return nil, errf(400, "InvalidParameterValue", "this simulator launches exactly one instance (MinCount=%s MaxCount=%s)", min, max)
	}
	if r.zone == "" {
		r.zone = s.opts.Zones[0]
	}
	if !slices.Contains(s.opts.Zones, r.zone) {
		return nil, errf(400, "InvalidParameterValue", "Invalid availability zone: [%s]", r.zone)
	}
	if err := s.readPlacement(r); err != nil {
		return nil, err
	}
	if r.userData, r.behavior, err = runOptions(f); err != nil {
		return nil, err
	}
	return r, nil
}

// readPlacement looks up the request's key pair and groups, and what its
// zone can offer now.
func (s *Server) readPlacement(r *launchRequest) *apiError {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.key, r.keyOK = s.keys[r.keyName]
	r.capacityShort = s.capacity[r.zone]
	r.unsupported = s.unsupported[r.typ+"/"+r.zone]
	for _, z := range s.opts.Zones {
		if z != r.zone && !s.unsupported[r.typ+"/"+z] {
			r.otherZones = append(r.otherZones, z)
		}
	}
	if r.keyName != "" && !r.keyOK {
		return errf(400, "InvalidKeyPair.NotFound", "The key pair '%s' does not exist", r.keyName)
	}
	for _, g := range r.groups {
		if _, err := s.groupLocked(g); err != nil {
			return err
		}
	}
	return s.checkPlacementGroupLocked(r)
}

// specTags are the tags a request's TagSpecifications give the resources
// of one type (instance, volume).
func specTags(f url.Values, resourceType string) map[string]string {
	tags := map[string]string{}
	for i := 1; i <= count(f, "TagSpecification"); i++ {
		p := "TagSpecification." + strconv.Itoa(i)
		if rt := f.Get(p + ".ResourceType"); rt != resourceType {
			continue
		}
		readTags(f, p+".Tag", tags)
	}
	return tags
}

// allocate refuses a launch the account's quota or the zone cannot take,
// as EC2 does only for a real launch.
func (s *Server) allocate(r *launchRequest) *apiError {
	s.mu.Lock()
	quotaErr := s.vcpuQuotaLocked(r.typ)
	s.mu.Unlock()
	if quotaErr != nil {
		return quotaErr
	}
	if r.unsupported {
		return errf(400, "Unsupported", "Your requested instance type (%s) is not supported in your requested Availability Zone (%s). Please retry your request by not specifying an Availability Zone or choosing %s.", r.typ, r.zone, strings.Join(r.otherZones, ", "))
	}
	if r.capacityShort {
		return errf(500, "InsufficientInstanceCapacity", "We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). Our system will be working on provisioning additional capacity. You can currently get %s capacity by not specifying an Availability Zone in your request or choosing %s.", r.typ, r.zone, r.typ, strings.Join(s.opts.Zones, ", "))
	}
	return nil
}

// instance is the pending instance the request launches.
func (r *launchRequest) instance(s *Server, token string) *instance {
	in := &instance{
		id: s.newID("i"), reservation: s.newID("r"), imageID: r.image.ID, typ: r.typ, zone: r.zone,
		keyName: r.keyName, subnet: r.subnet, token: token, groups: r.groups,
		state: Pending, launched: time.Now().UTC(), tags: r.tags, shutdownBehavior: r.behavior,
		powerOff: parseDeadMan(r.userData), rootDevice: r.image.rootDevice(), volumes: r.volumes, metadata: r.metadata,
		placementGroup: r.placementGroup,
	}
	if in.subnet == "" {
		in.subnet = "subnet-0sim" + r.zone[len(r.zone)-1:]
	}
	in.volumes = slices.Clone(r.volumes)
	for i := range in.volumes {
		in.volumes[i].ID = s.newID("vol")
		in.volumes[i].Tags = maps.Clone(r.volumeTags)
	}
	return in
}

// startHost makes the instance a real host from the start: its address
// exists while it is pending, as an EC2 instance's private IP does.
func (s *Server) startHost(in *instance, r *launchRequest) *apiError {
	s.mu.Lock()
	noSSH := s.noSSH > 0
	if noSSH {
		s.noSSH--
	}
	if !noSSH && s.slowSSH > 0 {
		s.slowSSH--
		in.sshAfter = s.slowSSHAfter
	}
	s.mu.Unlock()
	var hopts []testhost.Option
	if noSSH || in.sshAfter > 0 {
		hopts = append(hopts, testhost.WithoutSSHD())
	}
	switch {
	case noSSH || !r.keyOK:
	case r.image.LoginUser != "":
		hopts = append(hopts, testhost.WithLoginUser(r.image.LoginUser, r.key.line))
	default:
		hopts = append(hopts, testhost.WithAuthorizedKey(r.key.line))
	}
	h, htb, err := newHost(s.t, hopts...)
	if err != nil {
		return errf(500, "InternalError", "An internal error has occurred (test host: %v)", err)
	}
	in.host, in.hostTB = h, htb
	in.console = s.consoleKeysFor(h)
	return nil
}

// register records the launched instance under its token and starts its
// boot, and returns its reservation as RunInstances answers it.
func (s *Server) register(in *instance, token string) (xReservation, *apiError) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		in.hostTB.teardown()
		return xReservation{}, errf(503, "Unavailable", "The service is unavailable.")
	}
	defer s.mu.Unlock()
	s.instances[in.id] = in
	s.order = append(s.order, in.id)
	if token != "" {
		s.tokens[token] = in.reservation
	}
	if s.failBoot > 0 {
		s.failBoot--
		in.timers = append(in.timers, time.AfterFunc(s.opts.PendingDelay, func() { s.bootFailed(in.id) }))
	} else {
		in.timers = append(in.timers, time.AfterFunc(s.opts.PendingDelay, func() { s.boot(in.id) }))
	}
	if in.sshAfter > 0 {
		in.timers = append(in.timers, s.startSSHDAfter(in, in.sshAfter))
	}
	return s.reservationLocked(in.reservation), nil
}

// runOptions reads a RunInstances' user data and shutdown behaviour,
// refusing what EC2 refuses.
func runOptions(f url.Values) (userData, behavior string, err *apiError) {
	if ud := f.Get("UserData"); ud != "" {
		b, derr := base64.StdEncoding.DecodeString(ud)
		if derr != nil {
			return "", "", errf(400, "InvalidParameterValue", "Invalid BASE64 encoding of user data.")
		}
		userData = string(b)
	}
	behavior = f.Get("InstanceInitiatedShutdownBehavior")
	if behavior == "" {
		behavior = "stop"
	}
	if behavior != "stop" && behavior != "terminate" {
		return "", "", errf(400, "InvalidParameterValue", "Value (%s) for parameter instanceInitiatedShutdownBehavior is invalid.", behavior)
	}
	return userData, behavior, nil
}

// runResponse answers a RunInstances with its reservation, or, when the
// answer is to be lost (FailAfterCreate), with InternalError.
func runResponse(out xReservation, reqID string, lost bool) (any, *apiError) {
	if lost {
		return nil, errf(500, "InternalError", "An internal error has occurred")
	}
	return runInstancesResponse{Xmlns: xmlns, RequestID: reqID, xReservation: out}, nil
}

// transition moves an instance from one state to the next if it is still
// in from.
func (s *Server) transition(id, from, to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.instances[id]
	if in == nil || in.state != from || s.closed {
		return
	}
	in.state = to
}

// bootFailed ends a launch that fails on EC2's side (FailBoot).
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
		in.timers = append(in.timers, s.teardownAfter(in, s.opts.StoppingDelay, func() {
			s.transition(id, Stopping, Stopped)
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
	in.timers = []*time.Timer{s.teardownAfter(in, delay, func() {
		s.mu.Lock()
		in.state = Terminated
		in.terminatedAt = time.Now()
		s.mu.Unlock()
	})}
}

// teardownAfter tears in's test host down after d, then runs done; once
// the server is closing it does neither (close tears the host down).
func (s *Server) teardownAfter(in *instance, d time.Duration, done func()) *time.Timer {
	return time.AfterFunc(d, func() {
		if !s.enter() {
			return
		}
		defer s.wg.Done()
		in.hostTB.teardown()
		done()
	})
}

// enter registers a callback that is about to tear a host down, so close
// waits for it; it reports false once the server is closing (close
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

// visibleLocked reports whether DescribeInstances still lists in.
func (s *Server) visibleLocked(in *instance) bool {
	return in.state != Terminated || time.Since(in.terminatedAt) < s.opts.TerminatedVisibleFor
}

// xinstanceLocked renders in as DescribeInstances and RunInstances do.
func (s *Server) xinstanceLocked(in *instance) xInstance {
	x := xInstance{
		InstanceID: in.id, ImageID: in.imageID, InstanceType: in.typ, KeyName: in.keyName,
		State:       xstate(in.state),
		LaunchTime:  in.launched.Format("2006-01-02T15:04:05.000Z"),
		Placement:   xPlacement{AvailabilityZone: in.zone, Tenancy: "default", GroupName: in.placementGroup},
		Reason:      in.reason,
		StateReason: in.stateReason, Architecture: "x86_64", RootDeviceType: "ebs",
		RootDeviceName: in.rootDevice, VirtualizationType: "hvm", ClientToken: in.token,
		MetadataOptions: xMetadataOptions{State: "applied", HTTPTokens: in.metadata.HTTPTokens,
			HopLimit: in.metadata.HopLimit, HTTPEndpoint: "enabled"},
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
		for _, v := range in.volumes {
			x.BlockDeviceMapping = append(x.BlockDeviceMapping, xBlockDevice{DeviceName: v.Device, Ebs: xEbs{
				VolumeID: v.ID, Status: "attached",
				AttachTime: x.LaunchTime, DeleteOnTermination: true}})
		}
	}
	return x
}

// reservationLocked renders the reservation res with its instances.
func (s *Server) reservationLocked(res string) xReservation {
	out := xReservation{ReservationID: res, OwnerID: s.opts.OwnerID}
	for _, id := range s.order {
		in := s.instances[id]
		if in.reservation == res {
			out.Instances = append(out.Instances, s.xinstanceLocked(in))
		}
	}
	return out
}

// instanceMatches reports whether in passes every filter of a
// DescribeInstances.
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
		case f.name == "placement-group-name":
			v = in.placementGroup
		case f.name == "tag-key" || strings.HasPrefix(f.name, "tag:"):
			if !tagFilterMatches(f, in.tags) {
				return false
			}
			continue
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
	"client-token": true, "availability-zone": true, "key-name": true, "tag-key": true, "placement-group-name": true}

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
			CurrentState: xstate(in.state), PreviousState: xstate(prev)})
	}
	return resp, nil
}
