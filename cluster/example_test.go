package cluster_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"

	"github.com/kubeboot/kubeboot/cluster"
	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// A control plane for a test, as envtest gives one, with nothing to
// download: etcd, the API server, the controller-manager and the
// scheduler under a directory of the caller's, without root privileges.
// The kubeboot binary (on PATH, or Runtime.Binary) runs them.
func ExampleInit_controlPlaneOnly() {
	root, err := os.MkdirTemp("", "kubeboot-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	ctx := context.Background()
	c := &config.Config{Init: &kubeadmv1.InitConfiguration{}}
	// One of this machine's addresses ("" picks the default route's, or
	// 127.0.0.1 on a machine without one).
	c.Init.LocalAPIEndpoint.AdvertiseAddress = hostAddress
	c.Init.NodeRegistration.Name = "example"
	res, err := cluster.Init(ctx, cluster.InitOptions{
		Node:             cluster.Node{Root: root},
		Config:           c,
		ControlPlaneOnly: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	// Reset stops every component and removes what Init wrote.
	defer cluster.Reset(ctx, cluster.ResetOptions{Node: cluster.Node{Root: root}, Force: true})
	fmt.Println("API server:", res.APIServer)

	rest, err := clientcmd.BuildConfigFromFlags("", res.AdminKubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(rest)
	list, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	sort.Strings(names)
	fmt.Println("namespaces:", names)
	// Output:
	// API server: https://10.219.0.2:6443
	// namespaces: [default kube-node-lease kube-public kube-system]
}

// A single-node cluster on this host (as root), a pod run on it from the
// images the kubeboot binary carries, then everything removed again.
func ExampleInit() {
	root, err := os.MkdirTemp("", "kubeboot-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := &config.Config{Init: &kubeadmv1.InitConfiguration{}}
	c.Init.LocalAPIEndpoint.AdvertiseAddress = hostAddress
	c.Init.NodeRegistration.Name = "example"
	res, err := cluster.Init(ctx, cluster.InitOptions{Node: cluster.Node{Root: root}, Config: c, SingleNode: true})
	// Reset removes the node (also after a failed Init): its containers,
	// network, cgroups and files.
	defer cluster.Reset(context.Background(), cluster.ResetOptions{Node: cluster.Node{Root: root}, Force: true})
	if err != nil {
		log.Fatal(err)
	}
	rest, err := clientcmd.BuildConfigFromFlags("", res.AdminKubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(rest)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "web", Image: images.TestServer, ImagePullPolicy: corev1.PullIfNotPresent, Args: []string{"--port", "8080"},
		}}},
	}
	// Until the controller-manager has made the namespace's service
	// account, and the pod runs.
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
			return false, nil
		}
		return err == nil && got.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("node %s: pod web Running\n", res.NodeName)
	// Output: node example: pod web Running
}

// A cluster of two nodes on one machine, each under its own root (as
// root): the first control plane, then a worker that joins it with the
// token Init made, then both removed, worker first. Not run by `go test`:
// the nodes' networking would be the host's own.
func ExampleJoin() {
	ctx := context.Background()
	cp := &config.Config{Init: &kubeadmv1.InitConfiguration{}}
	cp.Init.NodeRegistration.Name = "cp1"
	first, err := cluster.Init(ctx, cluster.InitOptions{Node: cluster.Node{Root: "/var/lib/nodes/cp1", Out: os.Stdout}, Config: cp})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("worker join command:", first.Join)

	w := first.Join.Config()
	w.Join.NodeRegistration.Name = "w1"
	if _, err := cluster.Join(ctx, cluster.JoinOptions{Node: cluster.Node{Root: "/var/lib/nodes/w1", Out: os.Stdout}, Config: w}); err != nil {
		log.Fatal(err)
	}
	for _, root := range []string{"/var/lib/nodes/w1", "/var/lib/nodes/cp1"} {
		if err := cluster.Reset(ctx, cluster.ResetOptions{Node: cluster.Node{Root: root, Out: os.Stdout}, Force: true}); err != nil {
			log.Fatal(err)
		}
	}
}
