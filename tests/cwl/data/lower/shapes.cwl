cwlVersion: v1.2
class: Workflow
doc: |
  The shapes whose Toil unitName loses the step (scatter, subworkflow) or gets
  a random `_:UUID` (an inline tool without id), for plastic lower.
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
requirements:
  ScatterFeatureRequirement: {}
  SubworkflowFeatureRequirement: {}
hints:
  plastic:Plasticity:
    preempt: 3
inputs:
  names: string[]
outputs:
  all:
    type: File
    outputSource: sub/out
steps:
  make:
    # an inline tool without id, scattered
    run:
      class: CommandLineTool
      baseCommand: echo
      inputs:
        name:
          type: string
          inputBinding: {position: 1}
      stdout: $(inputs.name).txt
      outputs:
        out: stdout
    scatter: name
    in:
      name: names
    out: [out]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 300
        preempt: true
        instanceType: c5.large
  sub:
    # an inline subworkflow whose inner inline tool has its own id
    run:
      class: Workflow
      inputs:
        files: File[]
      outputs:
        out:
          type: File
          outputSource: inner/out
      steps:
        inner:
          run:
            class: CommandLineTool
            id: shout_tool
            baseCommand: cat
            requirements:
              ResourceRequirement:
                coresMin: 1
                coresMax: 1
                ramMin: 200
            inputs:
              files:
                type: File[]
                inputBinding: {position: 1}
            stdout: all.txt
            outputs:
              out: stdout
          in:
            files: files
          out: [out]
          requirements:
            plastic:Plasticity:
              vram: 700
              preempt: false
    in:
      files: make/out
    out: [out]
