"""What every test tier shares and no test module restates, one place each: paths (the checkout, the cache, kubectl),
ansible (running ansible, ansible-playbook and ansible-runner against the checkout), mpijob (the MPIJob builder, CRD
and API calls, and what the tests check on top) and locks (this machine's install lock). What the dev tools need too
lives below them, in hack/lib/ (polling among it: hack/lib/wait.py's wait_until)."""
