package ec2host

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Tag keys every launched instance carries.
const (
	TagManagedBy = "managed-by"
	TagOwner     = "owner"
	TagExpiresAt = "expires-at"
	// ManagedByValue is the managed-by tag value Sweep looks for.
	ManagedByValue = "pgbench"
)

// DefaultMaxLifetime is the dead-man switch's default.
const DefaultMaxLifetime = 12 * time.Hour

// RootVolume is the root EBS volume; zero fields keep the AMI's defaults.
type RootVolume struct {
	DeviceName string // default: the image's root device
	SizeGB     int32
	Type       string // gp3, io2, ...
	IOPS       int32
	Throughput int32 // MiB/s, gp3 only
	// Encrypted encrypts the root volume at rest, with the KMS key
	// KMSKeyID (empty: the account's default EBS key).
	Encrypted bool
	KMSKeyID  string
}

// Spec is what to launch.
type Spec struct {
	InstanceType string
	// ImageID, or an image lookup by ImageName (EC2 wildcards) and
	// ImageOwners when ImageID is empty.
	ImageID     string
	ImageName   string
	ImageOwners []string

	SubnetID         string
	SecurityGroupIDs []string
	KeyName          string
	RootVolume       RootVolume
	// AvailabilityZones are tried in order on capacity errors; empty lets
	// EC2 choose.
	AvailabilityZones []string
	// PlacementGroup is the name of a placement group to launch into; a
	// cluster group that already holds an instance takes the launch to
	// that instance's zone.
	PlacementGroup string

	Name  string            // the Name tag (optional)
	Owner string            // the owner tag
	Tags  map[string]string // extra tags; cannot override the managed ones
	// MetadataHTTPTokens is "required" for IMDSv2 only, "optional" to
	// allow IMDSv1 too; empty leaves EC2's default. MetadataHopLimit is
	// the PUT response hop limit (0: EC2's default, 1).
	MetadataHTTPTokens string
	MetadataHopLimit   int32
	// MaxLifetime is when the instance powers itself off and, being
	// launched with shutdown behaviour terminate, terminates (default 12h).
	MaxLifetime time.Duration

	// ClientToken makes RunInstances idempotent: the same token never
	// launches a second instance. Keep it stable across retries of one
	// create (the provider keeps it in private state); empty draws one.
	ClientToken string

	// OnLaunched is called as soon as RunInstances returned an instance,
	// before any waiting, so the caller can record the id.
	OnLaunched func(id string)
	// OnZoneSkipped is told of each zone given up for lack of capacity.
	OnZoneSkipped func(zone string, err error)
}

// Instance is what this package reports about an instance.
type Instance struct {
	ID, Type, ImageID, Zone, State, StateReason string
	PrivateIP, PublicIP, PublicDNS, KeyName     string
	PlacementGroup                              string   // its name, if any
	RootDevice                                  string   // the root volume's device
	VolumeIDs                                   []string // attached EBS volumes, root first as EC2 lists them
	LaunchTime                                  time.Time
	ExpiresAt                                   time.Time // from the expires-at tag; zero if absent
	Tags                                        map[string]string
	// Image is the image Launch resolved (only set by Launch).
	Image Image
}

// Address is where to SSH to: the public address, else the private one.
func (in *Instance) Address() string {
	if in.PublicIP != "" {
		return in.PublicIP
	}
	return in.PrivateIP
}

// ZoneAttempt is one zone that could not take the launch.
type ZoneAttempt struct {
	Zone string
	Code string
	Err  error
}

// CapacityError is returned when no zone could launch the type.
type CapacityError struct {
	InstanceType string
	Attempts     []ZoneAttempt
}

func (e *CapacityError) Error() string {
	parts := make([]string, len(e.Attempts))
	for i, a := range e.Attempts {
		zone := a.Zone
		if zone == "" {
			zone = "any zone"
		}
		parts[i] = fmt.Sprintf("%s: %s", zone, a.Code)
	}
	return fmt.Sprintf("no availability zone can launch %s (%s); try other zones or another instance type",
		e.InstanceType, strings.Join(parts, "; "))
}

// LaunchedError is returned when RunInstances failed but an instance had
// been created anyway (its response was lost): Launch terminated it.
type LaunchedError struct {
	InstanceID   string
	Err          error // the RunInstances error
	TerminateErr error // nil when the instance was terminated
}

func (e *LaunchedError) Error() string {
	if e.TerminateErr != nil {
		return fmt.Sprintf("%v; instance %s was created anyway and could not be terminated: %v (it is recorded; terminate it)", e.Err, e.InstanceID, e.TerminateErr)
	}
	return fmt.Sprintf("%v; instance %s was created anyway and has been terminated", e.Err, e.InstanceID)
}

func (e *LaunchedError) Unwrap() error { return e.Err }

// DeadManUserData is the user data that powers the instance off at
// expiresAt, the instant of its expires-at tag: with
// InstanceInitiatedShutdownBehavior=terminate the power-off is a
// termination, which stops the bill even if Terraform never comes back.
// The script counts the seconds left by the instance's own clock when it
// runs (minutes after the launch on metal), so the power-off fires when
// the tag says, not max_lifetime after boot. It waits at least a minute
// (maxLifetime if shorter): systemd-run refuses a timer of zero or less,
// and an instance booting past its expiry must still power off. A
// systemd-run timer lasts until the next boot and user data runs once per
// instance, so the arming script is kept on disk and a unit runs it again
// at every boot. shutdown is the fallback on images without systemd.
func DeadManUserData(maxLifetime time.Duration, expiresAt time.Time) string {
	floor := min(int64(maxLifetime/time.Second), 60)
	floor = max(floor, 1)
	return fmt.Sprintf(`#!/bin/sh
# pgbench dead-man switch: power off (= terminate) at expires-at,
# whatever happens to the Terraform run that launched this instance,
# armed now and again at every boot until then.
# expires-at: %s
cat > %s <<'SCRIPT'
#!/bin/sh
expires=%d
left=$(( expires - $(date +%%s) ))
[ "$left" -ge %d ] || left=%d
if command -v systemd-run >/dev/null 2>&1; then
  systemd-run --unit=pgbench-dead-man --on-active="${left}s" /bin/systemctl poweroff --force
else
  shutdown -P +$(( (left + 59) / 60 ))
fi
SCRIPT
chmod 755 %s
if [ -d /run/systemd/system ]; then
  cat > /etc/systemd/system/%s <<'UNIT'
[Unit]
Description=pgbench dead-man switch: arm the power-off at expires-at

[Service]
Type=oneshot
ExecStart=%s

[Install]
WantedBy=multi-user.target
UNIT
  systemctl enable %s
fi
%s
`, expiresAt.UTC().Format(time.RFC3339), deadManScript, expiresAt.Unix(), floor, floor, deadManScript,
		deadManBootUnit, deadManScript, deadManBootUnit, deadManScript)
}

// Where the dead-man script and the unit that re-arms it at boot live on
// the instance.
const (
	deadManScript   = "/usr/local/sbin/pgbench-dead-man"
	deadManBootUnit = "pgbench-dead-man-boot.service"
)

// NewClientToken draws a random client token.
func NewClientToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "pgbench-" + hex.EncodeToString(b)
}

// Launch launches one instance of spec, trying its zones in order. The
// instance id reaches spec.OnLaunched as soon as EC2 returns it. It does
// not wait for running (see WaitRunning).
func (c *Client) Launch(ctx context.Context, spec Spec) (*Instance, error) {
	in, token, im, err := c.runInput(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	zones, err := c.placementZones(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	if len(zones) == 0 {
		zones = []string{""}
	}
	capErr := &CapacityError{InstanceType: spec.InstanceType}
	for i, zone := range zones {
		// A token names one request: the same token with other
		// parameters (another zone) is refused by EC2 as a mismatch.
		in.ClientToken = aws.String(zoneToken(token, i))
		in.Placement = placement(spec, zone)
		out, err := c.ec2.RunInstances(ctx, in)
		if err == nil && len(out.Instances) == 1 {
			inst := fromSDK(out.Instances[0])
			inst.Image = im
			if spec.OnLaunched != nil {
				spec.OnLaunched(inst.ID)
			}
			return inst, nil
		}
		if err == nil {
			err = fmt.Errorf("run instances returned %d instances, want 1", len(out.Instances))
		}
		if code := errorCode(err); notRetried[code] {
			capErr.Attempts = append(capErr.Attempts, ZoneAttempt{Zone: zone, Code: code, Err: err})
			if spec.OnZoneSkipped != nil {
				spec.OnZoneSkipped(zone, err)
			}
			continue
		}
		if errorCode(err) == "VcpuLimitExceeded" {
			// EC2 refuses the quota (HTTP 400) before it creates
			// anything: there is no instance to look for.
			return nil, fmt.Errorf("launch: %w", c.vcpuLimitError(ctx, spec.InstanceType, err))
		}
		return nil, c.afterFailedRun(ctx, spec, *in.ClientToken, zone, err)
	}
	return nil, capErr
}

// runInput is the RunInstances request of spec, without a zone and a
// client token (Launch sets both per zone), and the token to derive them
// from: the type checked, the image resolved, the dead-man user data and
// the tags written, and the image it resolved. Launch and Preflight both
// send it, so the preflight asks EC2 about the very request the launch
// makes.
func (c *Client) runInput(ctx context.Context, spec Spec) (*ec2.RunInstancesInput, string, Image, error) {
	if spec.InstanceType == "" {
		return nil, "", Image{}, errors.New("instance type is required")
	}
	if _, err := c.DescribeInstanceType(ctx, spec.InstanceType); err != nil {
		return nil, "", Image{}, err
	}
	var im Image
	var err error
	switch {
	case spec.ImageID != "":
		im, err = c.DescribeImage(ctx, spec.ImageID)
	case spec.ImageName != "":
		im, err = c.FindImage(ctx, spec.ImageName, spec.ImageOwners)
	default:
		return nil, "", Image{}, errors.New("an image id or an image name filter is required")
	}
	if err != nil {
		return nil, "", Image{}, err
	}
	image := im.ID
	lifetime := spec.MaxLifetime
	if lifetime == 0 {
		lifetime = DefaultMaxLifetime
	}
	token := spec.ClientToken
	if token == "" {
		token = NewClientToken()
	}
	expires := c.now().Add(lifetime).UTC().Truncate(time.Second)
	tags := map[string]string{}
	for k, v := range spec.Tags {
		tags[k] = v
	}
	if spec.Name != "" {
		tags["Name"] = spec.Name
	}
	tags[TagManagedBy] = ManagedByValue
	tags[TagExpiresAt] = expires.Format(time.RFC3339)
	if spec.Owner != "" {
		tags[TagOwner] = spec.Owner
	}
	in := &ec2.RunInstancesInput{
		ImageId:                           aws.String(image),
		InstanceType:                      types.InstanceType(spec.InstanceType),
		MinCount:                          aws.Int32(1),
		MaxCount:                          aws.Int32(1),
		InstanceInitiatedShutdownBehavior: types.ShutdownBehaviorTerminate,
		UserData:                          aws.String(base64.StdEncoding.EncodeToString([]byte(DeadManUserData(lifetime, expires)))),
		TagSpecifications: []types.TagSpecification{
			{ResourceType: types.ResourceTypeInstance, Tags: sdkTags(tags)},
			{ResourceType: types.ResourceTypeVolume, Tags: sdkTags(tags)},
		},
	}
	if spec.KeyName != "" {
		in.KeyName = aws.String(spec.KeyName)
	}
	if spec.SubnetID != "" {
		in.SubnetId = aws.String(spec.SubnetID)
	}
	if len(spec.SecurityGroupIDs) > 0 {
		in.SecurityGroupIds = spec.SecurityGroupIDs
	}
	in.MetadataOptions = metadataOptions(spec)
	if rv := spec.RootVolume; rv != (RootVolume{}) {
		m, err := rootVolumeMapping(rv, im)
		if err != nil {
			return nil, "", Image{}, err
		}
		in.BlockDeviceMappings = []types.BlockDeviceMapping{m}
	}
	return in, token, im, nil
}

// rootVolumeMapping is the block device mapping that sets up the image's
// root volume as rv asks.
func rootVolumeMapping(rv RootVolume, im Image) (types.BlockDeviceMapping, error) {
	// The root volume is the image's root device: another name
	// would attach a second, unused volume beside the image's root.
	dev := rv.DeviceName
	if dev == "" {
		dev = im.RootDeviceName
	}
	if dev == "" {
		return types.BlockDeviceMapping{}, fmt.Errorf("image %s (%s) names no root device; cannot size its root volume", im.ID, im.Name)
	}
	ebs := &types.EbsBlockDevice{DeleteOnTermination: aws.Bool(true)}
	if rv.SizeGB > 0 {
		ebs.VolumeSize = aws.Int32(rv.SizeGB)
	}
	if rv.Type != "" {
		ebs.VolumeType = types.VolumeType(rv.Type)
	}
	if rv.IOPS > 0 {
		ebs.Iops = aws.Int32(rv.IOPS)
	}
	if rv.Throughput > 0 {
		ebs.Throughput = aws.Int32(rv.Throughput)
	}
	if rv.Encrypted {
		ebs.Encrypted = aws.Bool(true)
		if rv.KMSKeyID != "" {
			ebs.KmsKeyId = aws.String(rv.KMSKeyID)
		}
	}
	return types.BlockDeviceMapping{DeviceName: aws.String(dev), Ebs: ebs}, nil
}

// metadataOptions are the launch's instance metadata settings, nil for
// EC2's defaults.
func metadataOptions(spec Spec) *types.InstanceMetadataOptionsRequest {
	if spec.MetadataHTTPTokens == "" && spec.MetadataHopLimit == 0 {
		return nil
	}
	o := &types.InstanceMetadataOptionsRequest{HttpEndpoint: types.InstanceMetadataEndpointStateEnabled}
	if spec.MetadataHTTPTokens != "" {
		o.HttpTokens = types.HttpTokensState(spec.MetadataHTTPTokens)
	}
	if spec.MetadataHopLimit > 0 {
		o.HttpPutResponseHopLimit = aws.Int32(spec.MetadataHopLimit)
	}
	return o
}

// zoneToken derives the token of the i-th zone attempt; EC2 allows 64
// ASCII characters.
func zoneToken(token string, i int) string {
	t := fmt.Sprintf("%s-%d", token, i)
	if len(t) > 64 {
		t = t[len(t)-64:]
	}
	return t
}

// afterFailedRun handles a RunInstances error that is not about capacity:
// the request may still have created the instance (a lost response, an
// error after creation), so look it up by client token and terminate it,
// so that no running instance is left unrecorded.
func (c *Client) afterFailedRun(ctx context.Context, spec Spec, token, zone string, runErr error) error {
	where := spec.InstanceType
	if zone != "" {
		where += " in " + zone
	}
	runErr = fmt.Errorf("launch %s: %w", where, runErr)
	// The caller's ctx may be what failed; the clean-up gets its own.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	out, err := c.ec2.DescribeInstances(cctx, &ec2.DescribeInstancesInput{Filters: []types.Filter{
		{Name: aws.String("client-token"), Values: []string{token}},
	}})
	if err != nil {
		return fmt.Errorf("%w (and looking for an instance it may have created failed: %v)", runErr, err)
	}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			inst := fromSDK(i)
			if inst.State == "terminated" || inst.State == "shutting-down" {
				continue
			}
			if spec.OnLaunched != nil {
				spec.OnLaunched(inst.ID)
			}
			_, terr := c.ec2.TerminateInstances(cctx, &ec2.TerminateInstancesInput{InstanceIds: []string{inst.ID}})
			return &LaunchedError{InstanceID: inst.ID, Err: runErr, TerminateErr: terr}
		}
	}
	return runErr
}

func sdkTags(m map[string]string) []types.Tag {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]types.Tag, 0, len(m))
	for _, k := range keys {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

func fromSDK(i types.Instance) *Instance {
	in := &Instance{
		ID:         aws.ToString(i.InstanceId),
		Type:       string(i.InstanceType),
		ImageID:    aws.ToString(i.ImageId),
		PrivateIP:  aws.ToString(i.PrivateIpAddress),
		PublicIP:   aws.ToString(i.PublicIpAddress),
		PublicDNS:  aws.ToString(i.PublicDnsName),
		KeyName:    aws.ToString(i.KeyName),
		RootDevice: aws.ToString(i.RootDeviceName),
		LaunchTime: aws.ToTime(i.LaunchTime),
		Tags:       map[string]string{},
	}
	if i.Placement != nil {
		in.Zone, in.PlacementGroup = aws.ToString(i.Placement.AvailabilityZone), aws.ToString(i.Placement.GroupName)
	}
	if i.State != nil {
		in.State = string(i.State.Name)
	}
	if i.StateReason != nil {
		in.StateReason = aws.ToString(i.StateReason.Message)
	}
	for _, t := range i.Tags {
		in.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	for _, b := range i.BlockDeviceMappings {
		if b.Ebs != nil && aws.ToString(b.Ebs.VolumeId) != "" {
			in.VolumeIDs = append(in.VolumeIDs, aws.ToString(b.Ebs.VolumeId))
		}
	}
	if v, ok := in.Tags[TagExpiresAt]; ok {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			in.ExpiresAt = t
		}
	}
	return in
}
