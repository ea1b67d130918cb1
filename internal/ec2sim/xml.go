package ec2sim

import "encoding/xml"

// The element names below are EC2's (API version 2016-11-15) as the
// aws-sdk-go-v2 deserializers read them; a misspelled one is not an error
// there, the field just stays empty, so they are copied with care
// (e.g. the public address is <ipAddress>, the state <instanceState>).

const xmlns = "http://ec2.amazonaws.com/doc/2016-11-15/"

type xTag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

type xState struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

type xStateReason struct {
	Code    string `xml:"code"`
	Message string `xml:"message"`
}

type xGroup struct {
	GroupID   string `xml:"groupId"`
	GroupName string `xml:"groupName"`
}

type xPlacement struct {
	AvailabilityZone string `xml:"availabilityZone"`
	GroupName        string `xml:"groupName,omitempty"`
	Tenancy          string `xml:"tenancy"`
}

type xEbs struct {
	VolumeID            string `xml:"volumeId"`
	Status              string `xml:"status"`
	AttachTime          string `xml:"attachTime"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
}

type xBlockDevice struct {
	DeviceName string `xml:"deviceName"`
	Ebs        xEbs   `xml:"ebs"`
}

type xInstance struct {
	InstanceID         string           `xml:"instanceId"`
	ImageID            string           `xml:"imageId"`
	State              xState           `xml:"instanceState"`
	PrivateDNSName     string           `xml:"privateDnsName"`
	DNSName            string           `xml:"dnsName"`
	Reason             string           `xml:"reason"`
	KeyName            string           `xml:"keyName,omitempty"`
	AmiLaunchIndex     int              `xml:"amiLaunchIndex"`
	InstanceType       string           `xml:"instanceType"`
	LaunchTime         string           `xml:"launchTime"`
	Placement          xPlacement       `xml:"placement"`
	SubnetID           string           `xml:"subnetId,omitempty"`
	VpcID              string           `xml:"vpcId,omitempty"`
	PrivateIPAddress   string           `xml:"privateIpAddress,omitempty"`
	IPAddress          string           `xml:"ipAddress,omitempty"`
	GroupSet           []xGroup         `xml:"groupSet>item"`
	StateReason        *xStateReason    `xml:"stateReason,omitempty"`
	Architecture       string           `xml:"architecture"`
	RootDeviceType     string           `xml:"rootDeviceType"`
	RootDeviceName     string           `xml:"rootDeviceName"`
	BlockDeviceMapping []xBlockDevice   `xml:"blockDeviceMapping>item"`
	VirtualizationType string           `xml:"virtualizationType"`
	ClientToken        string           `xml:"clientToken"`
	TagSet             []xTag           `xml:"tagSet>item"`
	MetadataOptions    xMetadataOptions `xml:"metadataOptions"`
}

type xMetadataOptions struct {
	State        string `xml:"state"`
	HTTPTokens   string `xml:"httpTokens"`
	HopLimit     int    `xml:"httpPutResponseHopLimit"`
	HTTPEndpoint string `xml:"httpEndpoint"`
}

type xReservation struct {
	ReservationID string      `xml:"reservationId"`
	OwnerID       string      `xml:"ownerId"`
	GroupSet      []xGroup    `xml:"groupSet>item"`
	Instances     []xInstance `xml:"instancesSet>item"`
}

type runInstancesResponse struct {
	XMLName   xml.Name `xml:"RunInstancesResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	RequestID string   `xml:"requestId"`
	xReservation
}

type describeInstancesResponse struct {
	XMLName      xml.Name       `xml:"DescribeInstancesResponse"`
	Xmlns        string         `xml:"xmlns,attr"`
	RequestID    string         `xml:"requestId"`
	Reservations []xReservation `xml:"reservationSet>item"`
}

type xStateChange struct {
	InstanceID    string `xml:"instanceId"`
	CurrentState  xState `xml:"currentState"`
	PreviousState xState `xml:"previousState"`
}

type terminateInstancesResponse struct {
	XMLName   xml.Name       `xml:"TerminateInstancesResponse"`
	Xmlns     string         `xml:"xmlns,attr"`
	RequestID string         `xml:"requestId"`
	Instances []xStateChange `xml:"instancesSet>item"`
}

// returnResponse is the shape of every "<return>true</return>" answer
// (CreateTags, DeleteKeyPair, DeleteSecurityGroup, AuthorizeSecurityGroupIngress).
type returnResponse struct {
	XMLName   xml.Name
	Xmlns     string `xml:"xmlns,attr"`
	RequestID string `xml:"requestId"`
	Return    bool   `xml:"return"`
	GroupID   string `xml:"groupId,omitempty"`
	KeyPairID string `xml:"keyPairId,omitempty"`
}

// returned is the <return>true</return> answer to action.
func returned(action, reqID string) returnResponse {
	return returnResponse{XMLName: xml.Name{Local: action + "Response"}, Xmlns: xmlns, RequestID: reqID, Return: true}
}

type xImage struct {
	ImageID            string              `xml:"imageId"`
	ImageLocation      string              `xml:"imageLocation"`
	ImageState         string              `xml:"imageState"`
	ImageOwnerID       string              `xml:"imageOwnerId"`
	ImageOwnerAlias    string              `xml:"imageOwnerAlias,omitempty"`
	CreationDate       string              `xml:"creationDate"`
	IsPublic           bool                `xml:"isPublic"`
	Architecture       string              `xml:"architecture"`
	ImageType          string              `xml:"imageType"`
	Name               string              `xml:"name"`
	Description        string              `xml:"description"`
	RootDeviceType     string              `xml:"rootDeviceType"`
	RootDeviceName     string              `xml:"rootDeviceName"`
	VirtualizationType string              `xml:"virtualizationType"`
	EnaSupport         bool                `xml:"enaSupport"`
	BlockDeviceMapping []xImageBlockDevice `xml:"blockDeviceMapping>item"`
}

type xImageBlockDevice struct {
	DeviceName string    `xml:"deviceName"`
	Ebs        xImageEbs `xml:"ebs"`
}

type xImageEbs struct {
	SnapshotID          string `xml:"snapshotId"`
	VolumeSize          int    `xml:"volumeSize"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
	VolumeType          string `xml:"volumeType"`
	Encrypted           bool   `xml:"encrypted"`
}

type describeImagesResponse struct {
	XMLName   xml.Name `xml:"DescribeImagesResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	RequestID string   `xml:"requestId"`
	Images    []xImage `xml:"imagesSet>item"`
}

type xInstanceType struct {
	InstanceType      string `xml:"instanceType"`
	CurrentGeneration bool   `xml:"currentGeneration"`
	BareMetal         bool   `xml:"bareMetal"`
	VCPUInfo          struct {
		DefaultVCPUs          int `xml:"defaultVCpus"`
		DefaultCores          int `xml:"defaultCores"`
		DefaultThreadsPerCore int `xml:"defaultThreadsPerCore"`
	} `xml:"vCpuInfo"`
	MemoryInfo struct {
		SizeInMiB int64 `xml:"sizeInMiB"`
	} `xml:"memoryInfo"`
}

type describeInstanceTypesResponse struct {
	XMLName   xml.Name        `xml:"DescribeInstanceTypesResponse"`
	Xmlns     string          `xml:"xmlns,attr"`
	RequestID string          `xml:"requestId"`
	Types     []xInstanceType `xml:"instanceTypeSet>item"`
}

type importKeyPairResponse struct {
	XMLName        xml.Name `xml:"ImportKeyPairResponse"`
	Xmlns          string   `xml:"xmlns,attr"`
	RequestID      string   `xml:"requestId"`
	KeyFingerprint string   `xml:"keyFingerprint"`
	KeyName        string   `xml:"keyName"`
	KeyPairID      string   `xml:"keyPairId"`
}

type describeSecurityGroupsResponse struct {
	XMLName   xml.Name         `xml:"DescribeSecurityGroupsResponse"`
	Xmlns     string           `xml:"xmlns,attr"`
	RequestID string           `xml:"requestId"`
	Groups    []xSecurityGroup `xml:"securityGroupInfo>item"`
}

type xSecurityGroup struct {
	OwnerID          string `xml:"ownerId"`
	GroupID          string `xml:"groupId"`
	GroupName        string `xml:"groupName"`
	GroupDescription string `xml:"groupDescription"`
	VpcID            string `xml:"vpcId"`
}

type createSecurityGroupResponse struct {
	XMLName   xml.Name `xml:"CreateSecurityGroupResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	RequestID string   `xml:"requestId"`
	Return    bool     `xml:"return"`
	GroupID   string   `xml:"groupId"`
}

// errorResponse is EC2's error document; note the capitalised element
// names and RequestID, unlike the success documents.
type errorResponse struct {
	XMLName   xml.Name `xml:"Response"`
	Errors    []xError `xml:"Errors>Error"`
	RequestID string   `xml:"RequestID"`
}

type xError struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

type xVolumeAttachment struct {
	VolumeID            string `xml:"volumeId"`
	InstanceID          string `xml:"instanceId"`
	Device              string `xml:"device"`
	Status              string `xml:"status"`
	AttachTime          string `xml:"attachTime"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
}

type xVolume struct {
	VolumeID         string              `xml:"volumeId"`
	Size             int                 `xml:"size"`
	SnapshotID       string              `xml:"snapshotId"`
	AvailabilityZone string              `xml:"availabilityZone"`
	Status           string              `xml:"status"`
	CreateTime       string              `xml:"createTime"`
	Attachments      []xVolumeAttachment `xml:"attachmentSet>item"`
	TagSet           []xTag              `xml:"tagSet>item"`
	VolumeType       string              `xml:"volumeType"`
	Encrypted        bool                `xml:"encrypted"`
	KMSKeyID         string              `xml:"kmsKeyId,omitempty"`
}

type describeVolumesResponse struct {
	XMLName   xml.Name  `xml:"DescribeVolumesResponse"`
	Xmlns     string    `xml:"xmlns,attr"`
	RequestID string    `xml:"requestId"`
	Volumes   []xVolume `xml:"volumeSet>item"`
}
