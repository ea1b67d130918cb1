package ec2host

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"golang.org/x/crypto/ssh"
)

// KeyPair is a provider-generated SSH key pair.
type KeyPair struct {
	PrivateKeyPEM []byte // OpenSSH format
	PublicKeyLine string // authorized_keys format
}

// GenerateKeyPair makes a fresh ed25519 key pair.
func GenerateKeyPair() (KeyPair, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("generate ed25519 key: %w", err)
	}
	b, err := ssh.MarshalPrivateKey(priv, "pgbench")
	if err != nil {
		return KeyPair{}, fmt.Errorf("marshal private key: %w", err)
	}
	pk, err := ssh.NewPublicKey(pub)
	if err != nil {
		return KeyPair{}, fmt.Errorf("marshal public key: %w", err)
	}
	return KeyPair{PrivateKeyPEM: pem.EncodeToMemory(b), PublicKeyLine: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pk)))}, nil
}

// ImportKeyPair imports a public key under name and returns the key
// pair id.
func (c *Client) ImportKeyPair(ctx context.Context, name, publicKeyLine string, tags map[string]string) (string, error) {
	out, err := c.ec2.ImportKeyPair(ctx, importKeyPairInput(name, publicKeyLine, tags))
	if err != nil {
		return "", fmt.Errorf("import key pair %s: %w", name, err)
	}
	return aws.ToString(out.KeyPairId), nil
}

// DeleteKeyPair deletes the key pair; one that does not exist is success.
func (c *Client) DeleteKeyPair(ctx context.Context, name string) error {
	_, err := c.ec2.DeleteKeyPair(ctx, &ec2.DeleteKeyPairInput{KeyName: aws.String(name)})
	if err != nil && errorCode(err) != "InvalidKeyPair.NotFound" {
		return fmt.Errorf("delete key pair %s: %w", name, err)
	}
	return nil
}

// CreateSSHSecurityGroup creates a security group that admits TCP port
// (22 when zero) from cidrs and returns its id. On a failed authorization
// the group is deleted again.
func (c *Client) CreateSSHSecurityGroup(ctx context.Context, name, vpcID string, cidrs []string, port int32) (string, error) {
	if port == 0 {
		port = 22
	}
	if len(cidrs) == 0 {
		return "", fmt.Errorf("create security group %s: no CIDR to allow SSH from", name)
	}
	out, err := c.ec2.CreateSecurityGroup(ctx, createGroupInput(name, vpcID))
	if err != nil {
		return "", fmt.Errorf("create security group %s: %w", name, err)
	}
	id := aws.ToString(out.GroupId)
	ranges := make([]types.IpRange, len(cidrs))
	for i, cidr := range cidrs {
		ranges[i] = types.IpRange{CidrIp: aws.String(cidr), Description: aws.String("pgbench ssh")}
	}
	_, err = c.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{
		GroupId: aws.String(id),
		IpPermissions: []types.IpPermission{{
			IpProtocol: aws.String("tcp"), FromPort: aws.Int32(port), ToPort: aws.Int32(port), IpRanges: ranges,
		}},
	})
	if err != nil {
		if derr := c.DeleteSecurityGroup(ctx, id); derr != nil {
			return "", fmt.Errorf("allow ssh in security group %s: %w (and deleting it failed: %v)", id, err, derr)
		}
		return "", fmt.Errorf("allow ssh in security group %s: %w", id, err)
	}
	return id, nil
}

// FindSecurityGroup returns the id of the security group named name (in
// vpcID, or the default VPC when empty), "" when there is none: what a
// create killed inside CreateSecurityGroup may have left.
func (c *Client) FindSecurityGroup(ctx context.Context, name, vpcID string) (string, error) {
	in := &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{{Name: aws.String("group-name"), Values: []string{name}}}}
	if vpcID != "" {
		in.Filters = append(in.Filters, types.Filter{Name: aws.String("vpc-id"), Values: []string{vpcID}})
	}
	out, err := c.ec2.DescribeSecurityGroups(ctx, in)
	if err != nil {
		return "", fmt.Errorf("find security group %s: %w", name, err)
	}
	for _, g := range out.SecurityGroups {
		if aws.ToString(g.GroupName) == name {
			return aws.ToString(g.GroupId), nil
		}
	}
	return "", nil
}

// DeleteSecurityGroup deletes the group, retrying while an instance that
// is still terminating holds it (DependencyViolation) until ctx ends. A
// group already gone is success.
func (c *Client) DeleteSecurityGroup(ctx context.Context, id string) error {
	for {
		_, err := c.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(id)})
		switch code := errorCode(err); {
		case err == nil, code == "InvalidGroup.NotFound":
			return nil
		case code != "DependencyViolation":
			return fmt.Errorf("delete security group %s: %w", id, err)
		}
		if serr := sleep(ctx, c.poll); serr != nil {
			return fmt.Errorf("delete security group %s: still in use: %w", id, err)
		}
	}
}

// Image is an AMI found by FindImage.
type Image struct {
	ID, Name, OwnerID string
	Created           time.Time
	// RootDeviceName is where the image's root volume attaches
	// (/dev/xvda on Debian and Amazon Linux, /dev/sda1 on Ubuntu).
	RootDeviceName string
}

func imageFromSDK(im types.Image) Image {
	t, _ := time.Parse(time.RFC3339, aws.ToString(im.CreationDate))
	return Image{ID: aws.ToString(im.ImageId), Name: aws.ToString(im.Name), OwnerID: aws.ToString(im.OwnerId), Created: t,
		RootDeviceName: aws.ToString(im.RootDeviceName)}
}

// DescribeImage returns the image of an id; one the region does not
// offer (or that is not available) is an error naming it.
func (c *Client) DescribeImage(ctx context.Context, id string) (Image, error) {
	out, err := c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{id}})
	if errorCode(err) == "InvalidAMIID.NotFound" {
		return Image{}, fmt.Errorf("describe image: %w id %s in region %s (%v)", ErrNoImage, id, c.region, err)
	}
	if err != nil {
		return Image{}, fmt.Errorf("describe image %s: %w", id, err)
	}
	for _, im := range out.Images {
		if aws.ToString(im.ImageId) == id && im.State != types.ImageStateDeregistered {
			return imageFromSDK(im), nil
		}
	}
	return Image{}, fmt.Errorf("describe image: %w id %s in this region", ErrNoImage, id)
}

// FindImage returns the newest available image whose name matches
// namePattern (EC2 wildcards * and ?) owned by one of owners (account ids
// or aliases such as "amazon"; empty means any).
func (c *Client) FindImage(ctx context.Context, namePattern string, owners []string) (Image, error) {
	out, err := c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{
		Owners: owners,
		Filters: []types.Filter{
			{Name: aws.String("name"), Values: []string{namePattern}},
			{Name: aws.String("state"), Values: []string{"available"}},
		},
	})
	if err != nil {
		return Image{}, fmt.Errorf("find image %q: %w", namePattern, err)
	}
	var imgs []Image
	for _, im := range out.Images {
		imgs = append(imgs, imageFromSDK(im))
	}
	if len(imgs) == 0 {
		return Image{}, fmt.Errorf("find image: %w name %q owned by %v", ErrNoImage, namePattern, owners)
	}
	sort.Slice(imgs, func(i, j int) bool { return imgs[i].Created.After(imgs[j].Created) })
	return imgs[0], nil
}

// InstanceTypeInfo is what DescribeInstanceTypes says about a type.
type InstanceTypeInfo struct {
	Type      string
	VCPUs     int32
	MemoryMiB int64
	BareMetal bool
}

// DescribeInstanceType looks the type up; an unknown type is an error
// naming it.
func (c *Client) DescribeInstanceType(ctx context.Context, typ string) (InstanceTypeInfo, error) {
	out, err := c.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{types.InstanceType(typ)}})
	if err != nil {
		if errorCode(err) == "InvalidInstanceType" {
			return InstanceTypeInfo{}, fmt.Errorf("instance type %s: %w in region %s (check instance_type): %w", typ, ErrUnknownInstanceType, c.region, err)
		}
		return InstanceTypeInfo{}, fmt.Errorf("describe instance type %s: %w", typ, err)
	}
	if len(out.InstanceTypes) == 0 {
		return InstanceTypeInfo{}, fmt.Errorf("instance type %s: %w in region %s (check instance_type)", typ, ErrUnknownInstanceType, c.region)
	}
	it := out.InstanceTypes[0]
	info := InstanceTypeInfo{Type: string(it.InstanceType), BareMetal: aws.ToBool(it.BareMetal)}
	if it.VCpuInfo != nil {
		info.VCPUs = aws.ToInt32(it.VCpuInfo.DefaultVCpus)
	}
	if it.MemoryInfo != nil {
		info.MemoryMiB = aws.ToInt64(it.MemoryInfo.SizeInMiB)
	}
	return info, nil
}
