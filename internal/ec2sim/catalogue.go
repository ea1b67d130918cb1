package ec2sim

import (
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

// Image is an AMI the simulated region offers.
type Image struct {
	ID, Name, OwnerID string
	Created           time.Time
	Architecture      string
	// RootDeviceName is the device of the root volume (default
	// /dev/xvda; Ubuntu's images use /dev/sda1).
	RootDeviceName string
	// RootSizeGB is the size of the root snapshot, the smallest root
	// volume a launch may ask for (default 8).
	RootSizeGB int
	// LoginUser is the account the image's cloud-init gives the launch
	// key (admin on Debian, ubuntu on Ubuntu, ec2-user on Amazon Linux);
	// root's copy of the key then only says to log in as LoginUser, as
	// stock images do. Empty: a custom image that admits root.
	LoginUser string
	// OwnerAlias is the owner alias DescribeImages' Owner accepts besides
	// the account id ("amazon" for Amazon's own images).
	OwnerAlias string
}

// rootDevice is the image's root device name.
func (im Image) rootDevice() string {
	if im.RootDeviceName == "" {
		return "/dev/xvda"
	}
	return im.RootDeviceName
}

// rootSize is the size of the image's root snapshot in GiB.
func (im Image) rootSize() int {
	if im.RootSizeGB == 0 {
		return 8
	}
	return im.RootSizeGB
}

// snapshot is the id of the image's root snapshot.
func (im Image) snapshot() string { return "snap-" + strings.TrimPrefix(im.ID, "ami-") }

// defaultImages are the AMIs of a region whose Options name none, as the
// official images are: two Debian 12 releases (so "the most recent"
// filters have a choice to make), an Ubuntu 24.04 image, whose root device
// is /dev/sda1, and Amazon Linux 2023. None of them admits root.
func defaultImages() []Image {
	return []Image{
		{ID: "ami-036841078a4b68e14", Name: "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20241109", OwnerID: "099720109477",
			Created: time.Date(2024, 11, 9, 8, 0, 0, 0, time.UTC), Architecture: "x86_64", RootDeviceName: "/dev/sda1", LoginUser: "ubuntu"},
		{ID: "ami-0d1e2b3c4a5f60718", Name: "debian-12-amd64-20240201-1644", OwnerID: "136693071363", Created: time.Date(2024, 2, 1, 17, 0, 0, 0, time.UTC),
			Architecture: "x86_64", LoginUser: "admin"},
		{ID: "ami-0a9b8c7d6e5f40312", Name: "debian-12-amd64-20241104-1921", OwnerID: "136693071363", Created: time.Date(2024, 11, 4, 20, 0, 0, 0, time.UTC),
			Architecture: "x86_64", LoginUser: "admin"},
		{ID: "ami-0c80e2b6ccb9ad6d1", Name: "al2023-ami-2023.6.20241111.0-kernel-6.1-x86_64", OwnerID: "137112412989", OwnerAlias: "amazon",
			Created: time.Date(2024, 11, 12, 1, 0, 0, 0, time.UTC), Architecture: "x86_64", LoginUser: "ec2-user"},
	}
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

// describeImages answers DescribeImages: owners, ids and filters all
// narrow the list.
func (s *Server) describeImages(f url.Values, reqID string) (any, *apiError) {
	owners := list(f, "Owner")
	ids := list(f, "ImageId")
	fs := filters(f)
	// Real EC2 answers an id it does not know with an error, not with an
	// empty list.
	for _, id := range ids {
		if _, ok := s.image(id); !ok {
			return nil, errf(400, "InvalidAMIID.NotFound", "The image id '[%s]' does not exist", id)
		}
	}
	resp := describeImagesResponse{Xmlns: xmlns, RequestID: reqID}
	for _, im := range s.opts.Images {
		if len(owners) > 0 && !matchAny(owners, im.OwnerID) && !(im.OwnerAlias != "" && slices.Contains(owners, im.OwnerAlias)) &&
			!(slices.Contains(owners, "self") && im.OwnerID == s.opts.OwnerID) {
			continue
		}
		if len(ids) > 0 && !slices.Contains(ids, im.ID) {
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
			ImageOwnerAlias: im.OwnerAlias,
			IsPublic:        true, Architecture: im.Architecture, ImageType: "machine", Name: im.Name,
			RootDeviceType: "ebs", RootDeviceName: im.rootDevice(), VirtualizationType: "hvm", EnaSupport: true,
			BlockDeviceMapping: []xImageBlockDevice{{DeviceName: im.rootDevice(), Ebs: xImageEbs{
				SnapshotID: im.snapshot(), VolumeSize: im.rootSize(), VolumeType: "gp3", DeleteOnTermination: true}}}})
	}
	return resp, nil
}

// image returns the region's AMI of that id.
func (s *Server) image(id string) (Image, bool) {
	for _, im := range s.opts.Images {
		if im.ID == id {
			return im, true
		}
	}
	return Image{}, false
}
