// Package check renders the mcpgen Helm chart with Helm's own packages (no
// helm binary) and decodes every object it renders strictly into the
// Kubernetes API types: a field the API does not have, or one written
// twice, is an error, as a server-side apply would say. It is a module of
// its own so that Helm and the Kubernetes types stay off mcpgen's
// dependencies.
package check

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
)

const chartDir = "../helm/mcpgen"

// decoder decodes YAML strictly into the built-in types and the Prometheus
// operator's (the ServiceMonitor).
var decoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := monitoringv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, s, s, kjson.SerializerOptions{Yaml: true, Strict: true})
}()

// rendered is one object of a render: its template and what it decoded to.
type rendered struct {
	template string
	obj      runtime.Object
}

// render renders the chart with the values file (none: the defaults) and
// decodes every object strictly.
func render(t *testing.T, valuesFile string) map[string]rendered {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{}
	if valuesFile != "" {
		vals, err = chartutil.ReadValuesFile(valuesFile)
		if err != nil {
			t.Fatal(err)
		}
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "ws", Namespace: "agents", IsInstall: true}, chartutil.DefaultCapabilities.Copy())
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatalf("rendering the chart with %s: %v", describe(valuesFile), err)
	}
	objs := map[string]rendered{}
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range files {
			if !yield(name) {
				return
			}
		}
	})
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, _helpers.tpl
		}
		for i, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(doc) == "" || isComment(doc) {
				continue
			}
			obj, gvk, err := decoder.Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Errorf("%s (document %d): %v\n%s", name, i, err, doc)
				continue
			}
			key := gvk.Kind
			if _, dup := objs[key]; dup {
				t.Errorf("%s: a second %s", name, key)
			}
			objs[key] = rendered{name, obj}
		}
	}
	return objs
}

func isComment(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

func describe(valuesFile string) string {
	if valuesFile == "" {
		return "the default values"
	}
	return valuesFile
}

func kinds(objs map[string]rendered) []string {
	var ks []string
	for k := range objs {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestChartDefaults: the default values render a Deployment, Service,
// ConfigMap, ServiceAccount and PodDisruptionBudget that the API takes, and
// the pod is the workload that the issue asks for.
func TestChartDefaults(t *testing.T) {
	objs := render(t, "")
	want := []string{"ConfigMap", "Deployment", "PodDisruptionBudget", "Secret", "Service", "ServiceAccount"}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Fatalf("kinds rendered = %v, want %v", got, want)
	}
	d := objs["Deployment"].obj.(*appsv1.Deployment)
	checkPod(t, d, "emptyDir")
	// The default manifest's token_env is filled: a random token, in the
	// Secret that the pod has as its environment.
	if env := d.Spec.Template.Spec.Containers[0].EnvFrom; len(env) != 1 || env[0].SecretRef == nil || env[0].SecretRef.Name != "ws-mcpgen" {
		t.Errorf("envFrom = %+v, want the Secret ws-mcpgen", env)
	}
	if tok := objs["Secret"].obj.(*corev1.Secret).StringData["MCPGEN_TOKEN"]; len(tok) < 32 {
		t.Errorf("the Secret's MCPGEN_TOKEN is %q: want a random token of 32 characters or more", tok)
	}
	cm := objs["ConfigMap"].obj.(*corev1.ConfigMap)
	if m := cm.Data["mcpgen.toml"]; !strings.Contains(m, "[session.auth]") || !strings.Contains(m, `token_env = "MCPGEN_TOKEN"`) {
		t.Errorf("the ConfigMap's mcpgen.toml has no [session.auth] with token_env:\n%s", m)
	}
	pdb := objs["PodDisruptionBudget"].obj.(*policyv1.PodDisruptionBudget)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget: maxUnavailable %v, minAvailable %v; want 1 and none (a drain may evict the one replica)", pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable)
	}
}

// TestChartEveryOption: testdata/all.yaml turns every option on: the
// Secret, the PVC and the ServiceMonitor are rendered too, and each
// decodes strictly.
func TestChartEveryOption(t *testing.T) {
	objs := render(t, "testdata/all.yaml")
	want := []string{"ConfigMap", "Deployment", "PersistentVolumeClaim", "PodDisruptionBudget", "Secret", "Service", "ServiceAccount", "ServiceMonitor"}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Fatalf("kinds rendered = %v, want %v", got, want)
	}
	d := objs["Deployment"].obj.(*appsv1.Deployment)
	checkPod(t, d, "persistentVolumeClaim")
	c := d.Spec.Template.Spec.Containers[0]
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "ws-mcpgen" {
		t.Errorf("envFrom = %+v, want the Secret ws-mcpgen", c.EnvFrom)
	}
	if !slices.Contains(c.Args, "--ping-interval=10s") {
		t.Errorf("args %q lack the extra argument", c.Args)
	}
	sm := objs["ServiceMonitor"].obj.(*monitoringv1.ServiceMonitor)
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Path != "/metrics" || sm.Spec.Endpoints[0].Authorization == nil {
		t.Errorf("ServiceMonitor endpoints = %+v, want /metrics with a bearer token", sm.Spec.Endpoints)
	}
	pvc := objs["PersistentVolumeClaim"].obj.(*corev1.PersistentVolumeClaim)
	if got := pvc.Spec.Resources.Requests.Storage().String(); got != "5Gi" {
		t.Errorf("PVC size = %s, want 5Gi", got)
	}
	secret := objs["Secret"].obj.(*corev1.Secret)
	if got := secret.StringData["MCPGEN_TOKEN"]; got != "a-test-token-0123456789" {
		t.Errorf("the Secret's MCPGEN_TOKEN = %q, want the values' own", got)
	}
}

// checkPod checks what every render's pod must have: launch listening on
// the port behind auth, the manifest mounted as a directory (a subPath
// would not follow the ConfigMap's swaps), the probes on /healthz and
// /readyz, a non-root user and a read-only root filesystem.
func checkPod(t *testing.T, d *appsv1.Deployment, workspaceVolume string) {
	t.Helper()
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"launch --workspace", "--manifest /etc/mcpgen/mcpgen.toml", "--listen :8931", "--dir /workspace"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("readinessProbe = %+v, want GET /readyz", c.ReadinessProbe)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("livenessProbe = %+v, want GET /healthz", c.LivenessProbe)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("container securityContext = %+v, want readOnlyRootFilesystem and runAsNonRoot", sc)
	}
	if psc := spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext = %+v, want runAsNonRoot and a non-root runAsUser", psc)
	}
	if c.Resources.Limits.Memory().IsZero() {
		t.Errorf("no memory limit: %+v", c.Resources)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	for _, path := range []string{"/etc/mcpgen", "/workspace", "/tmp"} {
		m, ok := mounts[path]
		if !ok {
			t.Errorf("nothing mounted at %s: %+v", path, c.VolumeMounts)
		}
		if m.SubPath != "" {
			t.Errorf("%s mounted with subPath %q: it would not follow updates", path, m.SubPath)
		}
	}
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	if vols["manifest"].ConfigMap == nil {
		t.Errorf("volume manifest = %+v, want a ConfigMap", vols["manifest"])
	}
	if vols["tmp"].EmptyDir == nil {
		t.Errorf("volume tmp = %+v, want an emptyDir", vols["tmp"])
	}
	ws := vols["workspace"]
	if got := map[bool]string{true: "persistentVolumeClaim", false: "emptyDir"}[ws.PersistentVolumeClaim != nil]; got != workspaceVolume || (got == "emptyDir" && ws.EmptyDir == nil) {
		t.Errorf("volume workspace = %+v, want a %s", ws, workspaceVolume)
	}
}

// TestChartExistingSecret: with a Secret of the user's, none is made, and
// the pod has that one as its environment.
func TestChartExistingSecret(t *testing.T) {
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte("secret:\n  existingSecret: ws-env\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := render(t, file)
	if _, ok := objs["Secret"]; ok {
		t.Errorf("a Secret was made beside existingSecret")
	}
	env := objs["Deployment"].obj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].EnvFrom
	if len(env) != 1 || env[0].SecretRef == nil || env[0].SecretRef.Name != "ws-env" {
		t.Errorf("envFrom = %+v, want the Secret ws-env", env)
	}
}

// TestChartLint runs Helm's linter, as helm lint does, with each values
// file: only its suggestions (INFO, such as an icon) may remain.
func TestChartLint(t *testing.T) {
	for _, file := range []string{"", "testdata/all.yaml"} {
		vals := map[string]any{}
		if file != "" {
			var err error
			if vals, err = chartutil.ReadValuesFile(file); err != nil {
				t.Fatal(err)
			}
		}
		l := lint.All(chartDir, vals, "agents", false)
		for _, m := range l.Messages {
			if m.Severity > support.InfoSev {
				t.Errorf("helm lint with %s: %s", describe(file), m)
			} else {
				t.Logf("helm lint with %s: %s", describe(file), m)
			}
		}
	}
}

// TestExamples: the plain YAML of deploy/examples decodes strictly too,
// and the agent pod (shape 1) runs launch with the agent after --.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var jobs []*batchv1.Job
		for i, doc := range strings.Split(string(b), "\n---") {
			if isComment(doc) {
				continue
			}
			obj, _, err := decoder.Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Errorf("%s (document %d): %v", file, i, err)
				continue
			}
			if j, ok := obj.(*batchv1.Job); ok {
				jobs = append(jobs, j)
			}
		}
		if filepath.Base(file) == "agent-pod.yaml" {
			if len(jobs) != 1 {
				t.Fatalf("%s: %d Jobs, want 1", file, len(jobs))
			}
			args := strings.Join(jobs[0].Spec.Template.Spec.Containers[0].Args, " ")
			if !strings.HasPrefix(args, "launch --workspace ") || !strings.Contains(args, " -- ") {
				t.Errorf("%s: args %q, want launch --workspace W ... -- AGENT", file, args)
			}
		}
	}
}

// TestChartRejects: the check itself finds an unknown field, so that a
// clean render means something.
func TestChartRejects(t *testing.T) {
	doc := "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  prots: []\n"
	if _, _, err := decoder.Decode([]byte(doc), nil, nil); err == nil || !strings.Contains(err.Error(), `unknown field "spec.prots"`) {
		t.Fatalf("decoding a Service with spec.prots: err = %v, want an unknown field", err)
	}
}
