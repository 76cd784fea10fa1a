"""Where each command of the user guide's ```bash blocks is exercised (tests/unit/docs/test_docs_commands.py holds
this to the pages: a command added or changed on a page fails until it is placed here).

- RUN: tests/e2e/test_examples.py reads it from the page and runs it on the local cluster.
- a test file: that test runs the same command, or the same playbook or module with the same variables.
- NOT_RUN + why: nothing here runs it (a registry, a kind cluster, a user's own names); said so, not pretended."""

from __future__ import annotations

RUN = "run as read from the page (tests/e2e/test_examples.py)"
NOT_RUN = "not run here: "

INSTALL = "tests/integration/test_install.py"
TARBALL = "tests/integration/test_collection_tarball.py"
MIGRATE = "tests/e2e/test_migrate.py"
RENDER = "tests/unit/roles/test_role_render.py (the objects rendered; not applied)"
EE_BUILD = "hack/build/ee.sh (make ee: this build, the base image and kubernetes.core local; test_navigator.py)"
NAVIGATOR = (
    "tests/integration/test_navigator.py (the same flags, and --co=--net=host; the kubeconfig a copy of the local "
    "cluster's, job.yaml examples/local/pi.yaml, gitops/ a copy of examples/gitops)"
)
PLACEHOLDER = NOT_RUN + "a placeholder of the user's (a registry, a job file, a namespace of theirs)"
COMMANDS: dict[tuple[str, str], str] = {
    ("README.md", "make demo"): "hack/make/demo.sh (run before make test on 2 Dec: both green)",
    ("README.md", "make test"): ".ci/run",
    ("README.md", "ansible-galaxy collection install mpi-operator-0.1.0.tar.gz"): TARBALL,
    ("README.md", "ansible-playbook mpi.operator.image -e mpi_operator_image_kind_cluster=kind"): NOT_RUN
    + "needs kind",
    ("README.md", "ansible-playbook mpi.operator.install -e mpi_operator_image_pull_policy=Never"): TARBALL,
    ("README.md", "ansible-playbook mpi.operator.submit -e mpijob_src=examples/v2beta1/pi.yaml"): RUN,
    ("README.md", "ansible-playbook mpi.operator.uninstall"): TARBALL,
    ("README.md", "ansible-playbook playbooks/install.yml"): INSTALL,
    ("README.md", "ansible-playbook playbooks/install.yml --check --diff"): INSTALL,
    (
        "README.md",
        "ansible-playbook playbooks/install.yml -e mpi_operator_image_repository=registry.example.com/mpi-operator"
        " -e mpi_operator_image_tag=0.1.0 -e mpi_operator_watch_namespace=team-a",
    ): PLACEHOLDER,
    ("README.md", "ansible-playbook playbooks/uninstall.yml"): INSTALL,
    (
        "docs/apis.md",
        """ansible-playbook playbooks/install.yml -e '{"mpi_operator_apis": ["kubeflow.org", "batch.test.bdap.com"]}'""",
    ): "tests/integration/test_api_crds.py",
    ("docs/apis.md", "kubectl get mpijobs.kubeflow.org -A"): NOT_RUN + "a read-only listing",
    ("docs/apis.md", "kubectl get mpijobs.batch.tensorstack.dev -A"): NOT_RUN + "a read-only listing",
    ("docs/apis.md", "kubectl scale mpijobs.kubeflow.org/pi --replicas 3"): "tests/integration/test_api_lifecycle.py",
    ("docs/apis.md", "kubectl scale mpijobs.batch.tensorstack.dev/mpi-example --replicas 3"): (
        "tests/integration/test_api_lifecycle.py"
    ),
    ("docs/apis.md", "kubectl scale mpijobs.batch.test.bdap.com/simple-train-cpu --replicas 3"): (
        "tests/integration/test_api_lifecycle.py"
    ),
    (
        "docs/apis.md",
        "kubectl explain mpijobs.spec --api-version=kubeflow.org/v2beta1",
    ): "tests/integration/test_crd.py",
    ("docs/install.md", "ansible-galaxy collection build --output-path examples/ee ."): EE_BUILD,
    ("docs/install.md", "ansible-builder build -f examples/ee/execution-environment.yml -t mpi-operator-ee:0.1.0"): (
        EE_BUILD
    ),
    (
        "docs/install.md",
        "ansible-navigator run mpi.operator.install --eei mpi-operator-ee:0.1.0 --pp never --mode stdout"
        " --eev '~/.kube:/kube' --senv K8S_AUTH_KUBECONFIG=/kube/config",
    ): NAVIGATOR,
    (
        "docs/install.md",
        "ansible-navigator run mpi.operator.submit --eei mpi-operator-ee:0.1.0 --pp never --mode stdout"
        " --eev '~/.kube:/kube' --senv K8S_AUTH_KUBECONFIG=/kube/config -e mpijob_src=job.yaml",
    ): NAVIGATOR,
    (
        "docs/install.md",
        "ansible-navigator run gitops/site.yml --eei mpi-operator-ee:0.1.0 --pp never --mode stdout"
        " --eev '~/.kube:/kube' --senv K8S_AUTH_KUBECONFIG=/kube/config",
    ): NAVIGATOR,
    ("docs/install.md", "ansible-playbook mpi.operator.install"): TARBALL,
    ("docs/install.md", "ansible-playbook mpi.operator.install --check --diff"): INSTALL + " (the same playbook)",
    (
        "docs/install.md",
        "ansible-playbook mpi.operator.install -e mpi_operator_image_tag=0.1.0 -e mpi_operator_watch_namespace=team-a",
    ): INSTALL + " (one watched namespace)",
    ("docs/install.md", "ansible-playbook mpi.operator.uninstall"): TARBALL,
    ("docs/install.md", "ansible-playbook mpi.operator.image"): TARBALL,
    ("docs/install.md", "ansible-playbook mpi.operator.image -e mpi_operator_image_kind_cluster=kind"): NOT_RUN
    + "needs kind",
    (
        "docs/install.md",
        "ansible-playbook mpi.operator.image -e mpi_operator_image_repository=registry.example.com/team/mpi-operator"
        " -e mpi_operator_image_push=true",
    ): PLACEHOLDER,
    ("docs/install.md", "make image-archive"): "tests/e2e/test_image_archive.py",
    ("docs/install.md", "kind load image-archive _output/images/mpi-operator-0.1.0.tar --name kind"): NOT_RUN
    + "needs kind (tests/e2e/test_image_archive.py loads the same archive into containerd)",
    ("docs/install.md", "ansible-playbook playbooks/install.yml -e mpi_operator_image_pull_policy=Never"): (
        "tests/e2e/test_image_archive.py"
    ),
    ("docs/install.md", "ansible-playbook playbooks/submit.yml -e mpijob_src=examples/v2beta1/pi.yaml"): (
        "tests/e2e/test_examples.py (README's mpi.operator.submit of the same file)"
    ),
    ("docs/install.md", "make image IMAGE=registry.example.com/team/mpi-operator:0.1.0"): PLACEHOLDER,
    ("docs/install.md", "podman push registry.example.com/team/mpi-operator:0.1.0"): PLACEHOLDER,
    ("docs/install.md", "make image-archive IMAGE=registry.example.com/team/mpi-operator:0.1.0"): PLACEHOLDER,
    (
        "docs/install.md",
        "skopeo copy docker-archive:_output/images/mpi-operator-0.1.0.tar"
        " docker://registry.example.com/team/mpi-operator:0.1.0",
    ): "tests/e2e/test_image_archive.py (to a local registry)",
    (
        "docs/install.md",
        "ansible-playbook playbooks/install.yml -e mpi_operator_image_repository=registry.example.com/team/mpi-operator"
        """ -e mpi_operator_image_tag=0.1.0 -e '{"mpi_operator_image_pull_secrets": ["regcred"]}'""",
    ): RENDER,
    (
        "docs/install.md",
        "ansible-playbook playbooks/install.yml -e mpi_operator_image_repository=registry.example.com/ml/mpi-operator"
        """ -e 'mpi_operator_image_digest=sha256:<digest>' -e '{"mpi_operator_image_pull_secrets": ["regcred"]}'"""
        " -e mpi_operator_replicas=2 -e mpi_operator_log_format=json -e mpi_operator_monitoring_port=0",
    ): RENDER,
    (
        "docs/install.md",
        """ansible-playbook playbooks/install.yml -e '{"mpi_operator_pod_security_context": {"runAsUser": null,"""
        """ "runAsGroup": null}}'""",
    ): RENDER,
    (
        "docs/kueue.md",
        "ansible-playbook mpi.operator.submit -e mpijob_src=job.yaml -e mpijob_namespace=ml -e mpijob_queue_name=team-a",
    ): "tests/kueue/test_kueue.py (make test-kueue)",
    ("docs/migrate.md", "ansible-playbook mpi.operator.migrate --check --diff"): MIGRATE,
    ("docs/migrate.md", "ansible-playbook mpi.operator.migrate -e @operator-vars.yml"): MIGRATE,
    ("docs/migrate.md", "ansible-playbook mpi.operator.migrate -e mpi_operator_migrate_to=kubeflow"): MIGRATE,
    ("docs/migrate.md", "kubectl -n mpi-operator rollout status deploy/mpi-operator"): NOT_RUN + "a read-only look",
    ("docs/migrate.md", "kubectl get mpijobs -A"): NOT_RUN + "a read-only listing",
    ("docs/migrate.md", "kubectl -n mpi-operator get configmap mpi-operator-migration"): MIGRATE,
    ("docs/migrate.md", "ansible-playbook mpi.operator.migrate -e mpi_operator_migrate_to=kubeflow --check"): MIGRATE,
    ("docs/operations.md", "kubectl -n mpi-operator logs deploy/mpi-operator --tail=200"): NOT_RUN + "a read-only look",
    ("docs/operations.md", "kubectl -n mpi-operator logs deploy/mpi-operator '|' grep job=team-a/pi"): PLACEHOLDER,
    ("docs/operations.md", "kubectl -n mpi-operator logs deploy/mpi-operator --previous"): (
        "tests/integration/test_install_diagnostics.py"
    ),
    ("docs/operations.md", "kubectl -n team-a describe mpijob pi"): PLACEHOLDER,
    (
        "docs/operations.md",
        "kubectl -n team-a get events --field-selector involvedObject.kind=MPIJob,involvedObject.name=pi",
    ): PLACEHOLDER,
    (
        "docs/operations.md",
        "kubectl -n team-a get configmap pi-record -o 'jsonpath={.data.record\\.json}'",
    ): PLACEHOLDER,
    ("docs/operations.md", "kubectl -n team-a get configmap pi-record -o 'jsonpath={.data.pi-launcher-x7k2p\\.log}'"): (
        PLACEHOLDER
    ),
    ("docs/operations.md", "kubectl -n mpi-operator port-forward deploy/mpi-operator 8080 8081 '&'"): NOT_RUN
    + "tests/integration/test_install_metrics.py reads the same endpoints through the Service",
    (
        "docs/operations.md",
        "curl -s 'localhost:8081/healthz;' curl -s 'localhost:8081/readyz;' curl -s localhost:8080/metrics '|' grep"
        " '^mpi_operator'",
    ): NOT_RUN + "tests/integration/test_install_metrics.py reads the same endpoints through the Service",
    ("docs/operator.md", "make run"): "tests/integration/test_upgrade.py (runs the operator as make run does)",
    ("docs/operator.md", "make run 'ARGS=--namespace team-a --log-format json'"): PLACEHOLDER,
    ("docs/operator.md", "make bench"): NOT_RUN + "a benchmark (docs/dev/benchmarks.md records its runs)",
    ("docs/operator.md", "BENCH_PEERS=kubeflow make bench"): NOT_RUN + "a benchmark (docs/dev/benchmarks.md)",
    ("docs/operator.md", "BENCH_PEERS=kubeflow-tuned BENCH_JOBS=1000 BENCH_WORKERS=1 make bench"): NOT_RUN
    + "a benchmark (docs/dev/benchmarks.md)",
    ("docs/submit.md", "ansible-playbook playbooks/submit.yml -e mpijob_src=examples/v2beta1/pi.yaml"): (
        "tests/e2e/test_examples.py (README's mpi.operator.submit of the same file)"
    ),
    (
        "docs/submit.md",
        "ansible-playbook playbooks/submit.yml -e mpijob_src=examples/v1/openmpi-helloworld.yaml"
        " -e mpijob_namespace=team-a",
    ): RUN,
    (
        "docs/submit.md",
        "ansible-playbook playbooks/submit.yml -e mpijob_name=pi -e mpijob_image=mpioperator/mpi-pi:openmpi"
        """ -e '{"mpijob_command": ["mpirun", "--allow-run-as-root", "-n", "2", "/home/mpiuser/pi"]}'"""
        " -e mpijob_workers=2",
    ): RUN,
    ("docs/submit.md", "ansible-playbook playbooks/submit.yml -e mpijob_name=pi -e mpijob_state=absent"): (
        "tests/e2e/test_examples.py (its clean-up)"
    ),
    ("docs/submit.md", "ansible-playbook playbooks/submit.yml -e mpijob_src=job.yaml --check --diff"): TARBALL,
    (
        "docs/submit.md",
        """kubectl patch mpijob horovod-elastic --type merge -p '{"spec":{"mpiReplicaSpecs":{"Worker":{"replicas":3}}}}'""",
    ): "tests/e2e/test_elastic.py",
    ("docs/submit.md", "kubectl scale mpijob horovod-elastic --replicas 1"): "tests/e2e/test_elastic.py",
    ("docs/submit.md", "ansible localhost -m mpi.operator.mpijob -a 'name=horovod-elastic workers=3'"): (
        "tests/e2e/test_elastic.py"
    ),
}
