package main

import (
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// deploymentFor returns the Deployment app should have: spec.replicas
// replicas of spec.image, labelled app: <name>. The adapter's client adds
// the controller owner reference to app.
func deploymentFor(app webApp) *appsv1ac.DeploymentApplyConfiguration {
	labels := map[string]string{"app": app.Metadata.Name}
	return appsv1ac.Deployment(app.Metadata.Name, app.Metadata.Namespace).
		WithLabels(labels).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(app.Spec.Replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().WithContainers(
					corev1ac.Container().WithName("web").WithImage(app.Spec.Image).
						WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(80)),
				))))
}

// serviceFor returns the Service app should have: port 80 to its Pods'
// port 80.
func serviceFor(app webApp) *corev1ac.ServiceApplyConfiguration {
	labels := map[string]string{"app": app.Metadata.Name}
	return corev1ac.Service(app.Metadata.Name, app.Metadata.Namespace).
		WithLabels(labels).
		WithSpec(corev1ac.ServiceSpec().
			WithSelector(labels).
			WithPorts(corev1ac.ServicePort().WithName("http").WithPort(80).WithTargetPort(intstr.FromString("http"))))
}
