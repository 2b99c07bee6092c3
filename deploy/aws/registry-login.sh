# Shared by deploy/aws/user-data.sh.tmpl and control-plane.sh.tmpl, put in as it is (no template
# substitution here).
# an image in an ECR registry (deploy/aws/push-images.sh): docker logs in with the instance's role
# first (the AWS CLI installed when missing; the password through a pipe, never an argument)
registry_login() {
  local registry=${1%%/*} region
  case "$registry" in
    *.dkr.ecr.*.amazonaws.com|*.dkr.ecr.*.amazonaws.com.cn)
      command -v aws >/dev/null || (apt-get install -y -q awscli) || (dnf install -y -q awscli)
      region=${registry#*.dkr.ecr.}
