#!/bin/bash
# plastic's container images into Amazon ECR, in a registry your account owns, so EC2 instances can pull them
# (docs/images.md).  Builds the four images of docker-compose.yml, makes a repository for each one that is
# missing (tagged plastic:managed-by=plastic, scanned on push, AES256), logs Docker in and pushes.  Prints,
# on stdout and nothing else, the options to give plastic; progress goes to stderr.
#
#   deploy/aws/push-images.sh [--region REGION] [--account ACCOUNT_ID] [--no-build]
#
# Tested with stand-ins for aws and docker only (tests/deploy/test_push_images.py), never against AWS.
set -euo pipefail

# The compose cluster's images, exactly as plastic/compose.py names them (MESOS_IMAGE, AGENT_IMAGE,
# MANAGER_IMAGE, ZOOKEEPER_IMAGE); a test fails when the two differ.
AGENT_IMAGE=plastic/agent:latest
IMAGES=(plastic/zookeeper:latest plastic/mesos:1.11 plastic/manager:latest "$AGENT_IMAGE")
USAGE="usage: deploy/aws/push-images.sh [--region REGION] [--account ACCOUNT_ID] [--no-build]"

say() { printf 'push-images: %s\n' "$1" >&2; }
die() { say "$1"; exit "${2:-1}"; }   # one line on stderr; exit 2 for bad arguments, 1 for the rest

region="" account="" build=1
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) printf '%s\n' "$USAGE"; exit 0 ;;
    --no-build) build=0 ;;
    --region=*) region=${1#*=} ;;
    --account=*) account=${1#*=} ;;
    --region|--account)
      if [ $# -lt 2 ] || [ -z "$2" ] || [[ $2 == -* ]]; then die "$1 needs a value ($USAGE)" 2; fi
      if [ "$1" = --region ]; then region=$2; else account=$2; fi
      shift ;;
    *) die "unknown argument '$1' ($USAGE)" 2 ;;
  esac
  shift
done

region=${region:-${AWS_REGION:-${AWS_DEFAULT_REGION:-}}}
[ -n "$region" ] || die "no region: give --region REGION or set AWS_REGION" 2
[[ $region =~ ^[a-z]{2}(-[a-z]+)+-[0-9]+$ ]] || die "--region '$region' is not an AWS region (e.g. us-east-1)" 2
if [ -n "$account" ] && ! [[ $account =~ ^[0-9]{12}$ ]]; then
  die "--account '$account' is not an AWS account id (12 digits)" 2
fi

command -v aws >/dev/null || die "the AWS CLI (aws) is not on the PATH"
command -v docker >/dev/null || die "docker is not on the PATH"

# the repository's root: this file is deploy/aws/push-images.sh
case "$0" in */*) here=${0%/*} ;; *) here=. ;; esac
repo=$(cd "$here/../.." && pwd)

if [ -z "$account" ]; then
  account=$(aws sts get-caller-identity --query Account --output text --region "$region") \
    || die "cannot find the account (aws sts get-caller-identity failed): check the credentials or give --account"
  [[ $account =~ ^[0-9]{12}$ ]] || die "aws sts get-caller-identity gave '$account', not an account id"
fi
suffix=amazonaws.com
if [[ $region == cn-* ]]; then suffix=amazonaws.com.cn; fi   # the China regions' domain
registry="$account.dkr.ecr.$region.$suffix"

if [ "$build" = 1 ]; then
  if docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
  elif command -v docker-compose >/dev/null; then
    compose=(docker-compose)
  else
    die "neither 'docker compose' nor docker-compose is here to build the images (or give --no-build)"
  fi
  say "building the images (${compose[*]} -f docker-compose.yml build; the first build compiles Mesos for 35-60 minutes)"
  "${compose[@]}" -f "$repo/docker-compose.yml" build >&2
fi
for image in "${IMAGES[@]}"; do   # every image is here before anything is made on AWS
  docker image inspect "$image" >/dev/null 2>&1 \
    || die "$image is not built here: run without --no-build (or docker compose build)"
done

for image in "${IMAGES[@]}"; do
  name=${image%:*}
  if ! problem=$(aws ecr describe-repositories --repository-names "$name" --region "$region" 2>&1 >/dev/null); then
    if [[ $problem != *RepositoryNotFoundException* ]]; then
      printf '%s\n' "$problem" >&2
      die "cannot look up the repository $name (aws ecr describe-repositories failed)"
    fi
    aws ecr create-repository --repository-name "$name" --region "$region" \
      --image-scanning-configuration scanOnPush=true --encryption-configuration encryptionType=AES256 \
      --tags Key=plastic:managed-by,Value=plastic >/dev/null
    say "created the repository $name in $registry"
  fi
done

# the password goes from aws to docker through a pipe, never on a command line
if ! aws ecr get-login-password --region "$region" | docker login --username AWS --password-stdin "$registry" >&2; then
  die "cannot log Docker in to $registry (aws ecr get-login-password | docker login failed)"
fi

for image in "${IMAGES[@]}"; do
  docker tag "$image" "$registry/$image"
  docker push "$registry/$image" >&2
  say "pushed $registry/$image"
done

say "done; give plastic these options (--agent-image: plastic cloud up, plastic run --provider ec2):"
printf -- '--agent-image %s\n' "$registry/$AGENT_IMAGE"
printf -- '--registry %s\n' "$registry"
