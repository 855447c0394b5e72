package rbac

import (
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"

	"orch/internal/apiserver/authz"
)

// newBinding prepares a binding; namespace is "" for a ClusterRoleBinding.
func newBinding(name, namespace string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) *binding {
	b := &binding{name: name, namespace: namespace, roleRef: ref, subjects: make([]subject, len(subjects))}
	source := fmt.Sprintf("ClusterRoleBinding %q", name)
	if namespace != "" {
		source = fmt.Sprintf("RoleBinding %q", name+"/"+namespace)
	}
	for i, s := range subjects {
		kind, value := subjectMatch(s, namespace)
		b.subjects[i] = subject{
			match: kind,
			value: value,
			reason: fmt.Sprintf("RBAC: allowed by %s of %s %q to %s",
				source, ref.Kind, ref.Name, describeSubject(s, namespace)),
		}
	}
	return b
}

// subjectMatch reduces a subject to what a user must present. A service
// account subject without a namespace means the binding's own namespace;
// in a ClusterRoleBinding it matches no one.
func subjectMatch(s rbacv1.Subject, bindingNamespace string) (matchKind, string) {
	switch s.Kind {
	case rbacv1.UserKind:
		return matchUser, s.Name
	case rbacv1.GroupKind:
		return matchGroup, s.Name
	case rbacv1.ServiceAccountKind:
		namespace := s.Namespace
		if namespace == "" {
			namespace = bindingNamespace
		}
		if namespace == "" {
			return matchNone, ""
		}
		return matchUser, authz.ServiceAccountUser(namespace, s.Name)
	}
	return matchNone, ""
}

// describeSubject words a subject as upstream's reasons do; a service
// account is "NAME/NAMESPACE".
func describeSubject(s rbacv1.Subject, bindingNamespace string) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		namespace := s.Namespace
		if namespace == "" {
			namespace = bindingNamespace
		}
		return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+namespace)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}

// applies returns the first subject of b that u matches.
func (b *binding) applies(u *authz.User) (*subject, bool) {
	for i := range b.subjects {
		s := &b.subjects[i]
		switch s.match {
		case matchUser:
			if s.value == u.Name {
				return s, true
			}
		case matchGroup:
			for _, g := range u.Groups {
				if g == s.value {
					return s, true
				}
			}
		}
	}
	return nil, false
}
