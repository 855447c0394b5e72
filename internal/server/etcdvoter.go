package server

import (
	"context"
	"errors"
)

// etcdLearner says whether this server's etcd member is a learner
// (etcdserver.EtcdServer, from its own view of the membership).
type etcdLearner interface {
	IsLearner() bool
}

// errLearner is the etcd-voter check's failure while the member is a learner.
var errLearner = errors.New("this server's etcd member is a learner still catching up; " +
	"it is ready once the other servers promote it to a voting member")

// etcdVoterCheck is the readiness check "etcd-voter": it fails while this
// server's etcd member is a learner. A joining server's member is added
// as a learner, which does not count towards the quorum; were it ready
// then, three servers all ready could be one voter and two learners, and
// losing the voter would stop every write. Ready only once it votes, "all
// servers ready" means "any one may fail".
func etcdVoterCheck(member etcdLearner) func(context.Context) error {
	return func(context.Context) error {
		if member.IsLearner() {
			return errLearner
		}
		return nil
	}
}
