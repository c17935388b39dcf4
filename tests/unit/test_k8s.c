// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* k8s: a process's pod from /proc/PID/cgroup, and pods' jobs from a pod list (hostile text). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "k8s.h"
#include "ranks.h"

#define UID	"0d2b1f5e-9c3a-4b7e-8f21-5a6c7d8e9f01"
#define UID_	"0d2b1f5e_9c3a_4b7e_8f21_5a6c7d8e9f01"
#define CID	"4c1f0e9a8b7d6c5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e"

static int pod_of(const char *text, char *uid, char *cid)
{
	return k8s__cgroup_pod(text, strlen(text), uid, cid, K8S_CID_MAX + 1);
}

static void cgroup_pod__cgroupfs_v1__uid_and_container(void **state)
{
	char uid[K8S_UID_LEN + 1], cid[K8S_CID_MAX + 1];

	assert_int_equal(pod_of("12:pids:/kubepods/burstable/pod" UID "/" CID "\n"
				"11:memory:/kubepods/burstable/pod" UID "/" CID "\n"
				"1:name=systemd:/kubepods/burstable/pod" UID "/" CID "\n",
				uid, cid), 0);
	assert_string_equal(uid, UID);
	assert_string_equal(cid, CID);
	/* guaranteed QoS has no class level; the pod's own cgroup (a pause process) has no
	 * container */
	assert_int_equal(pod_of("0::/kubepods/pod" UID "\n", uid, cid), 0);
	assert_string_equal(uid, UID);
	assert_string_equal(cid, "");
}

static void cgroup_pod__systemd_v2__uid_unescaped(void **state)
{
	char uid[K8S_UID_LEN + 1], cid[K8S_CID_MAX + 1];

	assert_int_equal(pod_of("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
				UID_ ".slice/cri-containerd-" CID ".scope\n", uid, cid), 0);
	assert_string_equal(uid, UID);
	assert_string_equal(cid, CID);
	assert_int_equal(pod_of("0::/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" CID
				".scope", uid, cid), 0);	/* no newline at the end */
	assert_string_equal(uid, UID);
	assert_string_equal(cid, CID);
	assert_int_equal(pod_of("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
				UID_ ".slice/docker-" CID ".scope\n", uid, cid), 0);
	assert_string_equal(cid, CID);
	/* upper-case hex (some runtimes) comes out lower-case */
	assert_int_equal(pod_of("0::/kubepods/podABCDEF01-2345-6789-ABCD-EF0123456789/x\n", uid,
				NULL), 0);
	assert_string_equal(uid, "abcdef01-2345-6789-abcd-ef0123456789");
}

static void cgroup_pod__cgroup_namespace__found_below_dots(void **state)
{
	char uid[K8S_UID_LEN + 1], cid[K8S_CID_MAX + 1];

	/* the daemon in a pod with a cgroup namespace of its own sees other pods relative to it */
	assert_int_equal(pod_of("0::/../../kubepods-burstable-pod" UID_ ".slice/cri-containerd-"
				CID ".scope\n", uid, cid), 0);
	assert_string_equal(uid, UID);
	assert_string_equal(cid, CID);
}

static void cgroup_pod__not_a_pod__enoent(void **state)
{
	static const char *const texts[] = {
		"0::/user.slice/user-0.slice/session-3.scope\n",
		"0::/system.slice/docker-" CID ".scope\n",
		"12:memory:/slurm/uid_0/job_42/step_0\n",
		"0::/\n",
		"",
		"no colons at all\n",
		/* almost a uid: a non-hex digit, a wrong separator, one short, one long */
		"0::/kubepods/pod0d2b1f5e-9c3a-4b7e-8f21-5a6c7d8e9f0g/x\n",
		"0::/kubepods/pod0d2b1f5e-9c3a-4b7e+8f21-5a6c7d8e9f01/x\n",
		"0::/kubepods/pod0d2b1f5e-9c3a-4b7e-8f21-5a6c7d8e9f0/x\n",
		"0::/kubepods/pod0d2b1f5e-9c3a-4b7e-8f21-5a6c7d8e9f012/x\n",
		"0::/kubepods.slice/kubepods-burstable-pod" UID_ ".slic\n",
		"0::/kubepods.slice/kubepods-burstablepod" UID_ ".slice\n",
		"0::/kubepods.slice/pod" UID_ "x.slice\n",
		/* the uid in the controllers field, not in the path */
		"0:pod" UID ":/user.slice\n",
	};
	char uid[K8S_UID_LEN + 1], cid[K8S_CID_MAX + 1];
	size_t i;

	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		if (pod_of(texts[i], uid, cid) != -ENOENT)
			fail_msg("found pod %s in '%s'", uid, texts[i]);
	/* a bare systemd slice "pod<uid_>.slice" (no QoS prefix) is a pod */
	assert_int_equal(pod_of("0::/kubepods.slice/pod" UID_ ".slice\n", uid, cid), 0);
}

static void cgroup_pod__hostile_text__bounded(void **state)
{
	char uid[K8S_UID_LEN + 1], cid[K8S_CID_MAX + 1];
	static const char nul[] = "0::/kubepods/pod" UID "\0/x\n";
	size_t n = 1 << 20, i;
	char *big;

	/* a NUL inside a line: not text, not read */
	assert_int_equal(k8s__cgroup_pod(nul, sizeof(nul) - 1, uid, cid, sizeof(cid)), -ENOENT);
	/* the length is the bound, not a terminator: the pod is past it */
	assert_int_equal(k8s__cgroup_pod("0::/kubepods/pod" UID "\n", 20, uid, cid, sizeof(cid)),
			 -ENOENT);
	/* a huge line of slashes, then a pod on the next */
	big = malloc(n + 128);
	assert_non_null(big);
	memcpy(big, "0::", 3);
	for (i = 3; i < n; i++)
		big[i] = i % 7 ? '/' : 'p';
	big[n - 1] = '\n';
	i = (size_t)snprintf(big + n, 128, "0::/kubepods/pod%s/abc", UID);
	assert_int_equal(k8s__cgroup_pod(big, n + i, uid, cid, sizeof(cid)), 0);
	assert_string_equal(uid, UID);
	assert_string_equal(cid, "");	/* "abc": too short for a container id */
	free(big);
	/* a container id that does not fit the caller's buffer: left out */
	assert_int_equal(k8s__cgroup_pod("0::/kubepods/pod" UID "/" CID "\n",
					 strlen("0::/kubepods/pod" UID "/" CID "\n"), uid, cid, 16),
			 0);
	assert_string_equal(cid, "");
}

/* A node's pod list as `kubectl get --raw /api/v1/pods?fieldSelector=spec.nodeName=n1` gives
 * it, trimmed: a PyTorchJob worker, a JobSet's pod, a Job's, a StatefulSet's, a bare pod, a pod
 * whose only owner is no controller, and one with no uid. */
static const char pod_list[] =
"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"81234\"},"
"\"items\":["
"{\"metadata\":{\"name\":\"bert-worker-1\",\"namespace\":\"team-a\","
" \"uid\":\"" UID "\",\"resourceVersion\":\"81200\","
" \"creationTimestamp\":\"2025-01-07T10:00:00Z\","
" \"labels\":{\"training.kubeflow.org/job-name\":\"bert\","
"  \"training.kubeflow.org/operator-name\":\"pytorchjob-controller\","
"  \"training.kubeflow.org/replica-index\":\"1\","
"  \"training.kubeflow.org/replica-type\":\"worker\"},"
" \"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\","
"  \"name\":\"bert\",\"uid\":\"7c0e8a9b-1111-2222-3333-444455556666\",\"controller\":true,"
"  \"blockOwnerDeletion\":true}],"
" \"managedFields\":[{\"manager\":\"training-operator\",\"operation\":\"Update\","
"  \"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{\".\":{}}}}}]},"
" \"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"pytorch\",\"image\":\"x\","
"  \"env\":[{\"name\":\"MASTER_ADDR\",\"value\":\"bert-master-0\"}]}]},"
" \"status\":{\"phase\":\"Running\",\"podIP\":\"10.1.2.3\"}},"
"{\"metadata\":{\"name\":\"llm-workers-0-3-x7k2p\",\"namespace\":\"ml\","
" \"uid\":\"11111111-2222-3333-4444-555555555555\","
" \"labels\":{\"batch.kubernetes.io/job-name\":\"llm-workers-0\",\"job-name\":\"llm-workers-0\","
"  \"jobset.sigs.k8s.io/jobset-name\":\"llm\",\"jobset.sigs.k8s.io/replicatedjob-name\":"
"  \"workers\",\"batch.kubernetes.io/job-completion-index\":\"3\"},"
" \"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"llm-workers-0\","
"  \"uid\":\"aaaaaaaa-2222-3333-4444-555555555555\",\"controller\":true}]},"
" \"spec\":{\"nodeName\":\"n1\"}},"
"{\"metadata\":{\"name\":\"train-0-q9x\",\"namespace\":\"default\","
" \"uid\":\"22222222-2222-3333-4444-555555555555\","
" \"labels\":{\"batch.kubernetes.io/controller-uid\":\"bbbbbbbb-2222-3333-4444-555555555555\","
"  \"batch.kubernetes.io/job-name\":\"train\",\"controller-uid\":\"x\",\"job-name\":\"train\"},"
" \"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"train\",\"controller\":true}]}},"
"{\"metadata\":{\"name\":\"ray-workers-2\",\"namespace\":\"ray\","
" \"uid\":\"33333333-2222-3333-4444-555555555555\",\"labels\":{\"app\":\"ray\"},"
" \"ownerReferences\":[{\"kind\":\"StatefulSet\",\"name\":\"ray-workers\","
"  \"controller\":true}]}},"
"{\"metadata\":{\"name\":\"scratch\",\"namespace\":\"default\","
" \"uid\":\"44444444-2222-3333-4444-555555555555\"}},"
"{\"metadata\":{\"name\":\"adopted\",\"namespace\":\"default\","
" \"uid\":\"55555555-2222-3333-4444-555555555555\","
" \"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"train\",\"controller\":false}]}},"
"{\"metadata\":{\"name\":\"no-uid\",\"namespace\":\"default\"}}"
"]}";

static int parse(const char *text, size_t len, struct k8s_pod *pods, int max, char *err)
{
	return k8s__parse_pods(text, len, pods, max, err, 128);
}

static void parse_pods__owners__job_ids(void **state)
{
	struct k8s_pod pods[16];
	const struct k8s_pod *p;
	char err[128];

	assert_int_equal(parse(pod_list, sizeof(pod_list) - 1, pods, 16, err), 6);
	p = k8s__find(pods, 6, UID);
	assert_non_null(p);
	assert_string_equal(p->ns, "team-a");
	assert_string_equal(p->name, "bert-worker-1");
	assert_string_equal(p->job, "k8s:team-a:PyTorchJob:bert");
	/* a JobSet's pod: the JobSet, not its child Job */
	p = k8s__find(pods, 6, "11111111-2222-3333-4444-555555555555");
	assert_non_null(p);
	assert_string_equal(p->job, "k8s:ml:JobSet:llm");
	p = k8s__find(pods, 6, "22222222-2222-3333-4444-555555555555");
	assert_string_equal(p->job, "k8s:default:Job:train");
	p = k8s__find(pods, 6, "33333333-2222-3333-4444-555555555555");
	assert_string_equal(p->job, "k8s:ray:StatefulSet:ray-workers");
	/* owned by nothing, or by no controller: no job from Kubernetes */
	p = k8s__find(pods, 6, "44444444-2222-3333-4444-555555555555");
	assert_non_null(p);
	assert_string_equal(p->name, "scratch");
	assert_string_equal(p->job, "");
	p = k8s__find(pods, 6, "55555555-2222-3333-4444-555555555555");
	assert_string_equal(p->job, "");
	assert_null(k8s__find(pods, 6, "66666666-2222-3333-4444-555555555555"));
	/* max bounds what is read */
	assert_int_equal(parse(pod_list, sizeof(pod_list) - 1, pods, 2, err), 2);
	assert_string_equal(pods[1].job, "k8s:ml:JobSet:llm");
}

/* The pod watch's answer and a rank's environ make one job on two nodes, two in two
 * namespaces that reuse a job name (the same rendezvous service name and port). */
static void parse_pods__two_namespaces__split_by_owner(void **state)
{
	static const char two[] =
		"{\"items\":["
		"{\"metadata\":{\"name\":\"bert-worker-0\",\"namespace\":\"team-a\",\"uid\":\""
		"aaaaaaaa-0000-0000-0000-000000000001\",\"labels\":{\"training.kubeflow.org/"
		"job-name\":\"bert\"},\"ownerReferences\":[{\"kind\":\"PyTorchJob\",\"name\":"
		"\"bert\",\"controller\":true}]}},"
		"{\"metadata\":{\"name\":\"bert-worker-0\",\"namespace\":\"team-b\",\"uid\":\""
		"bbbbbbbb-0000-0000-0000-000000000001\",\"labels\":{\"training.kubeflow.org/"
		"job-name\":\"bert\"},\"ownerReferences\":[{\"kind\":\"PyTorchJob\",\"name\":"
		"\"bert\",\"controller\":true}]}}]}";
	static const char env[] = "MASTER_ADDR=bert-master-0\0MASTER_PORT=23456\0WORLD_SIZE=4\0"
				  "RANK=1\0";
	struct k8s_pod pods[4];
	struct rank_info a, b;
	struct job_ctx ctx = { .node = "n1", .ppid = 1 };
	char err[128];

	assert_int_equal(parse(two, sizeof(two) - 1, pods, 4, err), 2);
	ranks__init(&a);
	ranks__init(&b);
	/* without the pod watch, the rendezvous merges them */
	ranks__job(env, sizeof(env) - 1, &ctx, &a);
	ranks__job(env, sizeof(env) - 1, &ctx, &b);
	assert_string_equal(a.job, b.job);
	ctx.k8s_job = pods[0].job;
	ranks__job(env, sizeof(env) - 1, &ctx, &a);
	ctx.k8s_job = pods[1].job;
	ranks__job(env, sizeof(env) - 1, &ctx, &b);
	assert_string_equal(a.job, "k8s:team-a:PyTorchJob:bert");
	assert_string_equal(b.job, "k8s:team-b:PyTorchJob:bert");
	assert_int_equal(a.job_src, JOB_SRC_K8S);
}

static void parse_pods__label_without_owner__kind_generic(void **state)
{
	static const char t[] =
		"{\"items\":[{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\""
		"aaaaaaaa-0000-0000-0000-000000000001\",\"labels\":{\"training.kubeflow.org/"
		"job-name\":\"mpi-x\"},\"ownerReferences\":[{\"kind\":\"MPIJob\",\"name\":\"other\","
		"\"controller\":true}]}}]}";
	struct k8s_pod pods[1];
	char err[128];

	assert_int_equal(parse(t, sizeof(t) - 1, pods, 1, err), 1);
	assert_string_equal(pods[0].job, "k8s:n:TrainingJob:mpi-x");
}

static void parse_pods__long_names__hashed_in_bounds(void **state)
{
	char t[1024], name[254], job[128];
	struct k8s_pod pods[1];
	char err[128];
	int n;

	memset(name, 'a', 253);
	name[253] = '\0';
	n = snprintf(t, sizeof(t), "{\"items\":[{\"metadata\":{\"name\":\"%s\",\"namespace\":"
		     "\"n\",\"uid\":\"" UID "\",\"ownerReferences\":[{\"kind\":\"Job\",\"name\":"
		     "\"%s\",\"controller\":true}]}}]}", name, name);
	assert_int_equal(parse(t, (size_t)n, pods, 1, err), 1);
	assert_string_equal(pods[0].name, name);
	assert_memory_equal(pods[0].job, "k8s:n:Job:h-", 12);
	assert_int_equal(strlen(pods[0].job), 12 + 16);
	strcpy(job, pods[0].job);
	/* one letter less: another job */
	name[252] = '\0';
	n = snprintf(t, sizeof(t), "{\"items\":[{\"metadata\":{\"name\":\"x\",\"namespace\":"
		     "\"n\",\"uid\":\"" UID "\",\"ownerReferences\":[{\"kind\":\"Job\",\"name\":"
		     "\"%s\",\"controller\":true}]}}]}", name);
	assert_int_equal(parse(t, (size_t)n, pods, 1, err), 1);
	assert_string_not_equal(pods[0].job, job);
}

static void parse_pods__wrong_types__skipped(void **state)
{
	static const char t[] =
		"{\"items\":["
		"5, null, \"pod\", [],"
		"{\"metadata\":[]},"
		"{\"metadata\":{\"name\":7,\"namespace\":\"n\",\"uid\":\"" UID "\"}},"
		"{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":5}},"
		"{\"metadata\":{\"name\":\"p\",\"namespace\":\"N/s\",\"uid\":\"" UID "\"}},"
		"{\"metadata\":{\"name\":\"p\\u0000q\",\"namespace\":\"n\",\"uid\":\"" UID "\"}},"
		"{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"" UID_ "\"}},"
		"{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"" UID "x\"}},"
		/* well formed, with owners and labels of the wrong types: a pod with no job */
		"{\"metadata\":{\"name\":\"ok\",\"namespace\":\"n\",\"uid\":\"" UID "\","
		" \"labels\":[\"job-name\",\"x\"],\"ownerReferences\":{\"kind\":\"Job\"}}},"
		"{\"metadata\":{\"name\":\"ok2\",\"namespace\":\"n\",\"uid\":\""
		"aaaaaaaa-0000-0000-0000-000000000001\",\"labels\":{\"job-name\":\"a b\"},"
		" \"ownerReferences\":[7,{\"kind\":\"Job\",\"name\":\"j\",\"controller\":\"true\"},"
		" {\"kind\":\"Jo b\",\"name\":\"j\",\"controller\":true}]}}"
		"]}";
	struct k8s_pod pods[8];
	char err[128];

	assert_int_equal(parse(t, sizeof(t) - 1, pods, 8, err), 2);
	assert_string_equal(pods[0].name, "ok");
	assert_string_equal(pods[0].job, "");
	assert_string_equal(pods[1].name, "ok2");
	assert_string_equal(pods[1].job, "");
}

static void parse_pods__not_a_list__einval(void **state)
{
	static const char *const bad[] = {
		"", "[]", "{}", "{\"items\":{}}", "{\"items\":5}", "null", "{\"items\":[",
		"{\"items\":[{\"metadata\":{\"name\":\"p\"", "<html>502 Bad Gateway</html>",
		"{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":403}",
	};
	struct k8s_pod pods[2];
	char err[128];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (parse(bad[i], strlen(bad[i]), pods, 2, err) != -EINVAL)
			fail_msg("read '%s' as a pod list", bad[i]);
		assert_true(err[0]);
	}
	/* an empty list, or "items": null (an empty list from some servers) */
	assert_int_equal(parse("{\"items\":[]}", 12, pods, 2, err), 0);
	assert_int_equal(parse("{\"items\":null}", 14, pods, 2, err), 0);
}

static void parse_pods__huge__bounded(void **state)
{
	size_t n = K8S_LIST_VALUES + 16, i, len;
	struct k8s_pod pods[2];
	char err[128], *t;

	/* more values than the bound: refused as a whole, not read in part */
	t = malloc(n * 2 + 32);
	assert_non_null(t);
	len = (size_t)sprintf(t, "{\"items\":[");
	for (i = 0; i < n; i++)
		len += (size_t)sprintf(t + len, "0,");
	len += (size_t)sprintf(t + len, "0]}");
	assert_int_equal(parse(t, len, pods, 2, err), -EINVAL);
	assert_non_null(strstr(err, "not JSON"));
	/* nesting past the reader's depth */
	len = (size_t)sprintf(t, "{\"items\":[");
	for (i = 0; i < 100; i++)
		t[len++] = '[';
	assert_int_equal(parse(t, len, pods, 2, err), -EINVAL);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cgroup_pod__cgroupfs_v1__uid_and_container),
		cmocka_unit_test(cgroup_pod__systemd_v2__uid_unescaped),
		cmocka_unit_test(cgroup_pod__cgroup_namespace__found_below_dots),
		cmocka_unit_test(cgroup_pod__not_a_pod__enoent),
		cmocka_unit_test(cgroup_pod__hostile_text__bounded),
		cmocka_unit_test(parse_pods__owners__job_ids),
		cmocka_unit_test(parse_pods__two_namespaces__split_by_owner),
		cmocka_unit_test(parse_pods__label_without_owner__kind_generic),
		cmocka_unit_test(parse_pods__long_names__hashed_in_bounds),
		cmocka_unit_test(parse_pods__wrong_types__skipped),
		cmocka_unit_test(parse_pods__not_a_list__einval),
		cmocka_unit_test(parse_pods__huge__bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
