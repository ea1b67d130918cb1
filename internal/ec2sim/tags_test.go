package ec2sim_test

import (
	"context"
	"maps"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// TestTagsOnInstanceAndVolumes: the launch's volume TagSpecification
// reaches the root volume, whose id DescribeInstances lists; CreateTags and
// DeleteTags work on instances and volumes alike with EC2's semantics, and
// DescribeVolumes shows the result.
func TestTagsOnInstanceAndVolumes(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	c := client(t, sim)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tags := []types.Tag{{Key: aws.String("keep"), Value: aws.String("1")}, {Key: aws.String("drop"), Value: aws.String("x")},
		{Key: aws.String("match"), Value: aws.String("yes")}, {Key: aws.String("empty"), Value: aws.String("")}}
	out, err := c.RunInstances(ctx, run(func(in *ec2.RunInstancesInput) {
		in.DryRun = nil
		in.TagSpecifications = []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: tags},
			{ResourceType: types.ResourceTypeVolume, Tags: tags[:1]}}
	}))
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.Instances[0].InstanceId)
	d, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	bdm := d.Reservations[0].Instances[0].BlockDeviceMappings
	if len(bdm) != 1 || bdm[0].Ebs == nil || !volumeID.MatchString(aws.ToString(bdm[0].Ebs.VolumeId)) {
		t.Fatalf("block device mappings = %+v, want the root volume with a vol- id", bdm)
	}
	vol := aws.ToString(bdm[0].Ebs.VolumeId)
	if got := volumeTags(ctx, t, c, vol); !maps.Equal(got, map[string]string{"keep": "1"}) {
		t.Errorf("root volume tags at launch = %v, want keep=1 from the volume TagSpecification", got)
	}

	both := []string{id, vol}
	if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: both, Tags: []types.Tag{
		{Key: aws.String("drop"), Value: aws.String("x")}, {Key: aws.String("new"), Value: aws.String("2")}}}); err != nil {
		t.Fatal(err)
	}
	// A value given deletes only a matching tag; no value deletes any;
	// an empty value only an empty one; a missing key is no error.
	if _, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: both, Tags: []types.Tag{
		{Key: aws.String("drop")}, {Key: aws.String("match"), Value: aws.String("no")},
		{Key: aws.String("empty"), Value: aws.String("")}, {Key: aws.String("absent")}}}); err != nil {
		t.Fatal(err)
	}
	info, _ := sim.Instance(id)
	if want := map[string]string{"keep": "1", "match": "yes", "new": "2"}; !maps.Equal(info.Tags, want) {
		t.Errorf("instance tags = %v, want %v", info.Tags, want)
	}
	if got, want := volumeTags(ctx, t, c, vol), map[string]string{"keep": "1", "new": "2"}; !maps.Equal(got, want) {
		t.Errorf("volume tags = %v, want %v", got, want)
	}
	if len(info.Volumes) != 1 || info.Volumes[0].ID != vol || info.Volumes[0].Tags["new"] != "2" {
		t.Errorf("sim volumes = %+v, want %s tagged new=2", info.Volumes, vol)
	}
	byTag, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{Filters: []types.Filter{
		{Name: aws.String("attachment.instance-id"), Values: []string{id}}, {Name: aws.String("tag:new"), Values: []string{"2"}}}})
	if err != nil || len(byTag.Volumes) != 1 || aws.ToString(byTag.Volumes[0].Attachments[0].InstanceId) != id {
		t.Errorf("DescribeVolumes by instance and tag = %+v, %v; want the root volume attached to %s", byTag, err, id)
	}

	// All or nothing: an unknown id fails the call with its own code and
	// tags nothing; an id of no known kind is InvalidID.
	for res, want := range map[string]string{"vol-0123456789abcdef0": "InvalidVolume.NotFound",
		"i-0123456789abcdef0": "InvalidInstanceID.NotFound", "sg-1": "InvalidID"} {
		_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id, res}, Tags: []types.Tag{{Key: aws.String("z"), Value: aws.String("1")}}})
		if got := code(err); got != want {
			t.Errorf("CreateTags on %s: code %q (%v), want %s", res, got, err, want)
		}
	}
	if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: []types.Tag{{Key: aws.String("aws:x"), Value: aws.String("1")}}}); code(err) != "InvalidParameterValue" {
		t.Errorf("CreateTags of an aws: key: %v, want InvalidParameterValue", err)
	}
	if info, _ := sim.Instance(id); info.Tags["z"] != "" || info.Tags["aws:x"] != "" {
		t.Errorf("instance tags after refused CreateTags = %v, want no z or aws:x", info.Tags)
	}
	// No Tag at all deletes every tag.
	if _, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{vol}}); err != nil {
		t.Fatal(err)
	}
	if got := volumeTags(ctx, t, c, vol); len(got) != 0 {
		t.Errorf("volume tags after DeleteTags without tags = %v, want none", got)
	}

	// The volume goes with its instance.
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{vol}})
		if code(err) == "InvalidVolume.NotFound" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("DescribeVolumes of %s after termination: %v, want InvalidVolume.NotFound", vol, err)
		}
	}
}

// volumeID is the form of an EBS volume id.
var volumeID = regexp.MustCompile(`^vol-[0-9a-f]{17}$`)

// volumeTags reads a volume's tags back with DescribeVolumes.
func volumeTags(ctx context.Context, t *testing.T, c *ec2.Client, id string) map[string]string {
	t.Helper()
	out, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{id}})
	if err != nil || len(out.Volumes) != 1 {
		t.Fatalf("DescribeVolumes %s = %+v, %v; want one volume", id, out, err)
	}
	m := map[string]string{}
	for _, tg := range out.Volumes[0].Tags {
		m[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	return m
}
