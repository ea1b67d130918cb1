package ec2sim

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
)

type group struct {
	id, name, vpc, desc string
	ingress             []string // "tcp:22-22:0.0.0.0/0"
}

// SecurityGroups maps each security group id to its ingress rules, each
// as protocol:from-to:cidr.
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
	if dryRun(f) {
		return nil, errDryRun()
	}
	g := &group{id: s.newIDLocked("sg", 0x05e0000000000000), name: name, vpc: f.Get("VpcId"), desc: desc}
	s.groups[g.id] = g
	return createSecurityGroupResponse{Xmlns: xmlns, RequestID: reqID, Return: true, GroupID: g.id}, nil
}

func (s *Server) deleteSecurityGroup(f url.Values, reqID string) (any, *apiError) {
	id := f.Get("GroupId")
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.groupLocked(id)
	if err != nil {
		return nil, err
	}
	// As on EC2, a group still attached to an instance that has not
	// finished terminating cannot be deleted yet.
	for _, in := range s.instances {
		if in.state != Terminated && slices.Contains(in.groups, id) {
			return nil, errf(400, "DependencyViolation", "resource %s has a dependent object", g.id)
		}
	}
	delete(s.groups, id)
	resp := returned("DeleteSecurityGroup", reqID)
	resp.GroupID = id
	return resp, nil
}

func (s *Server) authorizeIngress(f url.Values, reqID string) (any, *apiError) {
	id := f.Get("GroupId")
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.groupLocked(id)
	if err != nil {
		return nil, err
	}
	n := count(f, "IpPermissions")
	if n == 0 {
		return nil, errf(400, "MissingParameter", "The request must contain the parameter IpPermissions")
	}
	for i := 1; i <= n; i++ {
		p := "IpPermissions." + strconv.Itoa(i)
		for j := 1; j <= count(f, p+".IpRanges"); j++ {
			rule := fmt.Sprintf("%s:%s-%s:%s", f.Get(p+".IpProtocol"), f.Get(p+".FromPort"), f.Get(p+".ToPort"), f.Get(p+".IpRanges."+strconv.Itoa(j)+".CidrIp"))
			if slices.Contains(g.ingress, rule) {
				return nil, errf(400, "InvalidPermission.Duplicate", "the specified rule \"peer: %s\" already exists", rule)
			}
			g.ingress = append(g.ingress, rule)
		}
	}
	return returned("AuthorizeSecurityGroupIngress", reqID), nil
}

// groupLocked returns the group id, or EC2's error for an unknown one.
func (s *Server) groupLocked(id string) (*group, *apiError) {
	g, ok := s.groups[id]
	if !ok {
		return nil, errf(400, "InvalidGroup.NotFound", "The security group '%s' does not exist", id)
	}
	return g, nil
}

// describeSecurityGroups answers DescribeSecurityGroups by GroupId.N and
// the filters group-id, group-name and vpc-id; an unknown id is EC2's
// InvalidGroup.NotFound, an unknown filter its InvalidParameterValue.
func (s *Server) describeSecurityGroups(f url.Values, reqID string) (any, *apiError) {
	ids := list(f, "GroupId")
	fs := filters(f)
	for _, fl := range fs {
		switch fl.name {
		case "group-id", "group-name", "vpc-id":
		default:
			return nil, errf(400, "InvalidParameterValue", "The filter '%s' is invalid", fl.name)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if _, err := s.groupLocked(id); err != nil {
			return nil, err
		}
	}
	resp := describeSecurityGroupsResponse{Xmlns: xmlns, RequestID: reqID}
	var keys []string
	for id := range s.groups {
		keys = append(keys, id)
	}
	slices.Sort(keys)
	for _, id := range keys {
		g := s.groups[id]
		if len(ids) > 0 && !slices.Contains(ids, id) {
			continue
		}
		ok := true
		for _, fl := range fs {
			v := map[string]string{"group-id": g.id, "group-name": g.name, "vpc-id": g.vpcID()}[fl.name]
			ok = ok && matchAny(fl.values, v)
		}
		if ok {
			resp.Groups = append(resp.Groups, xSecurityGroup{OwnerID: s.opts.OwnerID, GroupID: g.id, GroupName: g.name,
				GroupDescription: g.desc, VpcID: g.vpcID()})
		}
	}
	return resp, nil
}

// vpcID is the group's VPC: the one it was made in, else the default VPC.
func (g *group) vpcID() string {
	if g.vpc == "" {
		return "vpc-0sim"
	}
	return g.vpc
}
