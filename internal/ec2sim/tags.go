package ec2sim

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// EC2's tag limits (Tag restrictions in the EC2 user guide).
const (
	maxTagsPerResource = 50
	maxTagKeyLen       = 128
	maxTagValueLen     = 256
)

// readTags adds the tags prefix.N.Key / prefix.N.Value of a request to m.
func readTags(f url.Values, prefix string, m map[string]string) {
	for j := 1; j <= count(f, prefix); j++ {
		q := prefix + "." + strconv.Itoa(j)
		m[f.Get(q+".Key")] = f.Get(q + ".Value")
	}
}

// xtags renders tags sorted by key, so responses are stable.
func xtags(m map[string]string) []xTag {
	var out []xTag
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, xTag{Key: k, Value: m[k]})
	}
	return out
}

// taggedLocked returns the tags of the instance or volume id, or EC2's
// error for an id it does not know: InvalidID for one of no known kind,
// InvalidInstanceID.NotFound or InvalidVolume.NotFound for a well-formed
// one that does not exist.
func (s *Server) taggedLocked(id string) (map[string]string, *apiError) {
	switch {
	case strings.HasPrefix(id, "i-"):
		in, ok := s.instances[id]
		if !ok || !s.visibleLocked(in) {
			return nil, errf(400, "InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		}
		if in.tags == nil {
			in.tags = map[string]string{}
		}
		return in.tags, nil
	case strings.HasPrefix(id, "vol-"):
		v := s.volumeLocked(id)
		if v == nil {
			return nil, errf(400, "InvalidVolume.NotFound", "The volume '%s' does not exist.", id)
		}
		if v.Tags == nil {
			v.Tags = map[string]string{}
		}
		return v.Tags, nil
	}
	return nil, errf(400, "InvalidID", "The ID '%s' is not valid", id)
}

// volumeLocked returns the volume id of an instance that still has it: a
// terminated instance's volumes are deleted with it (DeleteOnTermination).
func (s *Server) volumeLocked(id string) *Volume {
	for _, in := range s.instances {
		if in.state == Terminated {
			continue
		}
		for i := range in.volumes {
			if in.volumes[i].ID == id {
				return &in.volumes[i]
			}
		}
	}
	return nil
}

// requestTag is one Tag.N of a CreateTags or DeleteTags; hasValue is
// false when the request left Tag.N.Value out (DeleteTags: any value).
type requestTag struct {
	key, value string
	hasValue   bool
}

// requestTags reads Tag.N, refusing what EC2 refuses in any tag request:
// an empty or over-long key or value, and the reserved aws: prefix.
func requestTags(f url.Values) ([]requestTag, *apiError) {
	var out []requestTag
	for j := 1; j <= count(f, "Tag"); j++ {
		q := "Tag." + strconv.Itoa(j)
		t := requestTag{key: f.Get(q + ".Key")}
		t.value, t.hasValue = f.Get(q+".Value"), f.Has(q+".Value")
		switch {
		case t.key == "":
			return nil, errf(400, "InvalidParameterValue", "Tag key cannot be null or empty")
		case len(t.key) > maxTagKeyLen:
			return nil, errf(400, "InvalidParameterValue", "Tag key exceeds the maximum length of %d characters", maxTagKeyLen)
		case len(t.value) > maxTagValueLen:
			return nil, errf(400, "InvalidParameterValue", "Tag value exceeds the maximum length of %d characters", maxTagValueLen)
		case strings.HasPrefix(strings.ToLower(t.key), "aws:"):
			return nil, errf(400, "InvalidParameterValue", "Tag keys starting with 'aws:' are reserved for internal use")
		}
		out = append(out, t)
	}
	return out, nil
}

// tagRequest reads the resources and tags of a CreateTags or DeleteTags
// and answers a DryRun, as EC2 checks them before it looks at the resources.
func tagRequest(f url.Values) ([]string, []requestTag, *apiError) {
	ids := list(f, "ResourceId")
	if len(ids) == 0 {
		return nil, nil, errf(400, "MissingParameter", "The request must contain the parameter resourceIdSet")
	}
	tags, err := requestTags(f)
	if err != nil {
		return nil, nil, err
	}
	if dryRun(f) {
		return nil, nil, errDryRun()
	}
	return ids, tags, nil
}

// changeTags answers a CreateTags or DeleteTags: it reads the request,
// finds every resource (all or nothing: the first unknown one is the
// error) and lets change edit their tags, under the lock.
func (s *Server) changeTags(f url.Values, change func(targets []map[string]string, tags []requestTag) *apiError) *apiError {
	ids, tags, err := tagRequest(f)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var targets []map[string]string
	for _, id := range ids {
		m, err := s.taggedLocked(id)
		if err != nil {
			return err
		}
		targets = append(targets, m)
	}
	return change(targets, tags)
}

// createTags is EC2 CreateTags: it adds or overwrites each tag on every
// resource, all or nothing.
func (s *Server) createTags(f url.Values, reqID string) (any, *apiError) {
	if len(list(f, "ResourceId")) > 0 && count(f, "Tag") == 0 {
		return nil, errf(400, "MissingParameter", "The request must contain the parameter tagSet")
	}
	err := s.changeTags(f, func(targets []map[string]string, tags []requestTag) *apiError {
		for _, m := range targets {
			n := len(m)
			for _, t := range tags {
				if _, ok := m[t.key]; !ok {
					n++
				}
			}
			if n > maxTagsPerResource {
				return errf(400, "TagLimitExceeded", "The maximum number of Tags for a resource has been reached.")
			}
		}
		for _, m := range targets {
			for _, t := range tags {
				m[t.key] = t.value
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return returned("CreateTags", reqID), nil
}

// deleteTags is EC2 DeleteTags: a tag given with a value goes only when
// the resource's value is that one (an empty value matches only an empty
// one), a tag given without a value goes whatever its value, and no Tag
// at all deletes every user tag. Deleting a tag that is not there is not
// an error.
func (s *Server) deleteTags(f url.Values, reqID string) (any, *apiError) {
	err := s.changeTags(f, func(targets []map[string]string, tags []requestTag) *apiError {
		for _, m := range targets {
			if len(tags) == 0 {
				clear(m)
				continue
			}
			for _, t := range tags {
				if v, ok := m[t.key]; ok && (!t.hasValue || v == t.value) {
					delete(m, t.key)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return returned("DeleteTags", reqID), nil
}

// describeVolumes is EC2 DescribeVolumes for the volumes of live
// instances, by VolumeId.N and the filters volume-id,
// attachment.instance-id, tag-key and tag:KEY.
func (s *Server) describeVolumes(f url.Values, reqID string) (any, *apiError) {
	ids := list(f, "VolumeId")
	fs := filters(f)
	for _, fl := range fs {
		if !knownVolumeFilters[fl.name] && !strings.HasPrefix(fl.name, "tag:") {
			return nil, errf(400, "InvalidParameterValue", "The filter '%s' is invalid", fl.name)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if !strings.HasPrefix(id, "vol-") {
			return nil, errf(400, "InvalidParameterValue", "Invalid id: \"%s\" (expecting \"vol-...\")", id)
		}
		if s.volumeLocked(id) == nil {
			return nil, errf(400, "InvalidVolume.NotFound", "The volume '%s' does not exist.", id)
		}
	}
	resp := describeVolumesResponse{Xmlns: xmlns, RequestID: reqID}
	for _, iid := range s.order {
		in := s.instances[iid]
		if in.state == Terminated {
			continue
		}
		for _, v := range in.volumes {
			if (len(ids) > 0 && !slices.Contains(ids, v.ID)) || !volumeMatches(in, v, fs) {
				continue
			}
			resp.Volumes = append(resp.Volumes, s.xvolumeLocked(in, v))
		}
	}
	return resp, nil
}

var knownVolumeFilters = map[string]bool{"volume-id": true, "attachment.instance-id": true, "tag-key": true}

// volumeMatches reports whether v, attached to in, passes every filter.
func volumeMatches(in *instance, v Volume, fs []filter) bool {
	for _, f := range fs {
		switch {
		case f.name == "volume-id" && !matchAny(f.values, v.ID):
			return false
		case f.name == "attachment.instance-id" && !matchAny(f.values, in.id):
			return false
		case (f.name == "tag-key" || strings.HasPrefix(f.name, "tag:")) && !tagFilterMatches(f, v.Tags):
			return false
		}
	}
	return true
}

// xvolumeLocked renders v, attached to in, as DescribeVolumes does.
func (s *Server) xvolumeLocked(in *instance, v Volume) xVolume {
	at := in.launched.Format("2006-01-02T15:04:05.000Z")
	state := "in-use"
	attach := "attached"
	if in.state == ShuttingDown {
		attach = "detaching"
	}
	return xVolume{VolumeID: v.ID, Size: v.SizeGB, AvailabilityZone: in.zone, Status: state, CreateTime: at,
		VolumeType: v.Type, Encrypted: v.Encrypted, KMSKeyID: v.KMSKeyID, TagSet: xtags(v.Tags),
		Attachments: []xVolumeAttachment{{VolumeID: v.ID, InstanceID: in.id, Device: v.Device, Status: attach,
			AttachTime: at, DeleteOnTermination: true}}}
}

// tagFilterMatches is EC2's tag-key and tag:KEY filters on a resource's
// tags: some key matches, or the key's value does.
func tagFilterMatches(f filter, tags map[string]string) bool {
	if f.name == "tag-key" {
		return slices.ContainsFunc(slices.Collect(maps.Keys(tags)), func(k string) bool { return matchAny(f.values, k) })
	}
	v, ok := tags[strings.TrimPrefix(f.name, "tag:")]
	return ok && matchAny(f.values, v)
}
