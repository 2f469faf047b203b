//! The Fortran module's per-type specifics (one procedure per element kind, and
//! per communicator kind) are generated from the templates below into their own
//! file, `fortran/distreshape_specifics.inc`, which the module includes (a
//! Fortran `include` line, no preprocessor in anyone's build), and their generic
//! interfaces into the marked section of `fortran/distreshape.f90`, so that they
//! cannot drift apart. Regenerate with
//! `DISTRESHAPE_BLESS=1 cargo test --test fortran_specifics`.

use std::path::Path;

/// Suffix, Fortran type and `dr_dtype` of every supported element kind: the
/// Fortran kinds of the C types of the dtypes. The unsigned dtypes have none
/// (Fortran has no unsigned integers).
const KINDS: [(&str, &str, &str); 9] = [
    ("r32", "real(real32)", "DR_DTYPE_FLOAT32"),
    ("r64", "real(real64)", "DR_DTYPE_FLOAT64"),
    ("i32", "integer(int32)", "DR_DTYPE_INT32"),
    ("i64", "integer(int64)", "DR_DTYPE_INT64"),
    ("c64", "complex(real32)", "DR_DTYPE_COMPLEX64"),
    ("c128", "complex(real64)", "DR_DTYPE_COMPLEX128"),
    ("i8", "integer(int8)", "DR_DTYPE_INT8"),
    ("i16", "integer(int16)", "DR_DTYPE_INT16"),
    ("bool", "logical(c_bool)", "DR_DTYPE_BOOL"),
];

/// Suffix, Fortran type and integer handle (MPI_Fint) of both communicator kinds.
const COMMS: [(&str, &str, &str); 2] = [
    ("", "type(MPI_Comm)", "comm%MPI_VAL"),
    ("_int", "integer", "comm"),
];

/// Ranks `dr_plan_allocate_output` supports.
const MAX_RANK: usize = 7;

const RESHAPE: &str = "
  subroutine reshape_@K@C(a, gshape, split, comm, new_gshape, new_split, b, nout, local_len, &
                         new_local_len, stat)
    @T, dimension(..), contiguous, target, intent(in) :: a
    @T, dimension(..), contiguous, target, intent(inout) :: b
    @M, intent(in) :: comm
    integer(int64), intent(in) :: gshape(:), new_gshape(:)
    integer, intent(in) :: split, new_split
    integer(int64), intent(out), optional :: nout
    integer(int64), intent(in), optional :: local_len, new_local_len
    integer, intent(out), optional :: stat
    call reshape_core(@D, c_loc(a), shape(a, int64), gshape, split, @H, new_gshape, new_split, &
                      c_loc(b), shape(b, int64), nout, local_len, new_local_len, stat)
  end subroutine reshape_@K@C
";

const CREATE_WITH_MOLD: &str = "
  subroutine plan_create_@K@C(gshape, split, comm, local_len, new_gshape, new_split, plan, mold, &
                              new_local_len, options, stat)
    integer(int64), intent(in) :: gshape(:), new_gshape(:), local_len
    integer, intent(in) :: split, new_split
    @M, intent(in) :: comm
    type(dr_plan), intent(inout) :: plan
    @T, dimension(..), intent(in) :: mold  ! only its type matters
    integer(int64), intent(in), optional :: new_local_len
    type(dr_plan_options), intent(in), optional :: options
    integer, intent(out), optional :: stat
    call plan_create_core(@D, gshape, split, @H, local_len, new_gshape, new_split, &
                          plan, new_local_len, options, stat)
  end subroutine plan_create_@K@C
";

const CREATE_LAYOUTS_WITH_MOLD: &str = "
  subroutine plan_create_layouts_@K@C(plan, in_layout, out_layout, comm, mold, options, stat)
    type(dr_plan), intent(inout) :: plan
    type(dr_layout), intent(in) :: in_layout, out_layout
    @M, intent(in) :: comm
    @T, dimension(@S), intent(in) :: mold  ! only its type matters
    type(dr_plan_options), intent(in), optional :: options
    integer, intent(out), optional :: stat
    call plan_create_layouts_core(plan, in_layout, out_layout, @H, @D, &
                                  options, stat)
  end subroutine plan_create_layouts_@K@C
";

/// The suffix of the element kind whose `mold` is the default integer: an
/// assumed-rank mold of it could not be told from the scalar `dtype` of the
/// layout plans' dtype form, so its molds are arrays of ranks 1 to [`MAX_RANK`],
/// one specific each.
const DEFAULT_INTEGER: &str = "i32";

/// The kinds and mold shapes of the layout plans' mold specifics: suffix (with
/// the rank for the default integer's), Fortran type, `dr_dtype` and the mold's
/// `dimension(...)`.
fn layout_molds() -> Vec<(String, &'static str, &'static str, String)> {
    KINDS
        .iter()
        .flat_map(|&(suffix, ty, dtype)| {
            let shapes: Vec<(String, String)> = if suffix == DEFAULT_INTEGER {
                (1..=MAX_RANK)
                    .map(|r| (format!("{suffix}_r{r}"), vec![":"; r].join(", ")))
                    .collect()
            } else {
                vec![(suffix.to_string(), String::from(".."))]
            };
            shapes
                .into_iter()
                .map(move |(name, dims)| (name, ty, dtype, dims))
        })
        .collect()
}

/// The names of the layout plans' mold specifics, both communicator kinds.
fn layout_mold_names() -> Vec<String> {
    COMMS
        .iter()
        .flat_map(|c| {
            layout_molds()
                .into_iter()
                .map(move |(k, ..)| format!("plan_create_layouts_{k}{}", c.0))
        })
        .collect()
}

const CREATE_STRIDED: &str = "
  subroutine plan_create_strided_@K@C(plan, in_layout, in_mold, out_layout, out_mold, comm, &
                                      options, stat)
    type(dr_plan), intent(inout) :: plan
    type(dr_layout), intent(in) :: in_layout, out_layout
    @T, dimension(..), intent(in) :: in_mold, out_mold  ! their types and strides matter
    @M, intent(in) :: comm
    type(dr_plan_options), intent(in), optional :: options
    integer, intent(out), optional :: stat
    call plan_create_strided_core(plan, @D, in_layout, in_mold, out_layout, out_mold, @H, &
                                  options, stat)
  end subroutine plan_create_strided_@K@C
";

const EXECUTE: &str = "
  subroutine execute_@K(plan, a, b, stat)
    type(dr_plan), intent(in) :: plan
    @T, dimension(..), target, intent(in) :: a
    @T, dimension(..), target, intent(inout) :: b
    integer, intent(out), optional :: stat
    if (plan%strided .or. .not. (is_contiguous(a) .and. is_contiguous(b))) then
      call execute_as_is_core(plan, @D, a, b, stat)
    else
      call execute_core(plan, @D, c_loc(a), shape(a, int64), c_loc(b), shape(b, int64), stat)
    end if
  end subroutine execute_@K

  subroutine execute_begin_@K(plan, a, b, request, stat)
    type(dr_plan), intent(in) :: plan
    @T, dimension(..), target, asynchronous, intent(in) :: a
    @T, dimension(..), target, asynchronous, intent(inout) :: b
    type(dr_request), intent(inout) :: request
    integer, intent(out), optional :: stat
    if (plan%strided .or. .not. (is_contiguous(a) .and. is_contiguous(b))) then
      call begin_as_is_core(plan, @D, a, b, request, stat)
    else
      call begin_core(plan, @D, c_loc(a), shape(a, int64), c_loc(b), shape(b, int64), request, &
                      stat)
    end if
  end subroutine execute_begin_@K

  subroutine execute_in_place_@K(plan, buf, stat)
    type(dr_plan), intent(in) :: plan
    @T, contiguous, target, intent(inout) :: buf(:)
    integer, intent(out), optional :: stat
    call in_place_core(plan, @D, c_loc(buf), size(buf, kind=int64), stat)
  end subroutine execute_in_place_@K
";

const BATCH: &str = "
  subroutine execute_batch_@K(plan, a, b, stat)
    type(dr_plan), intent(in) :: plan
    @T, dimension(..), target, intent(in) :: a
    @T, dimension(..), target, intent(inout) :: b
    integer, intent(out), optional :: stat
    call batch_core(plan, @D, a, b, stat)
  end subroutine execute_batch_@K

  subroutine execute_batch_begin_@K(plan, a, b, request, stat)
    type(dr_plan), intent(in) :: plan
    @T, dimension(..), target, asynchronous, intent(in) :: a
    @T, dimension(..), target, asynchronous, intent(inout) :: b
    type(dr_request), intent(inout) :: request
    integer, intent(out), optional :: stat
    call batch_begin_core(plan, @D, a, b, request, stat)
  end subroutine execute_batch_begin_@K
";

const FUSED: &str = "
  function fused_field_@K(a, b) result(field)
    @T, dimension(..), target, intent(in) :: a
    @T, dimension(..), target, intent(inout) :: b
    type(dr_fused_field) :: field
    call fused_field_core(@D, a, b, field)
  end function fused_field_@K
";

const ALLOCATE: &str = "
  subroutine allocate_@K(plan, b, global_bounds, stat)
    type(dr_plan), intent(in) :: plan
    @T, allocatable, intent(inout) :: b(..)
    logical, intent(in), optional :: global_bounds
    integer, intent(out), optional :: stat
    integer(int64) :: lb(MAX_RANK), ub(MAX_RANK)
    integer(c_int) :: status
    call output_bounds(plan, rank(b), global_bounds, lb, ub, status)
    if (status == DR_SUCCESS) then
      select rank (b)
@R      end select
    end if
    call finish(status, stat)
  end subroutine allocate_@K
";

fn fill(template: &str, kind: (&str, &str, &str), comm: (&str, &str, &str)) -> String {
    template
        .replace("@K", kind.0)
        .replace("@T", kind.1)
        .replace("@D", kind.2)
        .replace("@C", comm.0)
        .replace("@M", comm.1)
        .replace("@H", comm.2)
        .replace("@R", &rank_branches())
}

/// One `rank (r)` branch per supported rank, allocating `b` with bounds `lb:ub`.
fn rank_branches() -> String {
    (1..=MAX_RANK)
        .map(|r| {
            let bounds: Vec<String> = (1..=r).map(|d| format!("lb({d}):ub({d})")).collect();
            format!(
                "      rank ({r})\n        if (allocated(b)) deallocate(b)\n        allocate(b({}))\n",
                bounds.join(", ")
            )
        })
        .collect()
}

/// `interface name` with `procedures`, wrapped at 100 columns.
fn interface(name: &str, procedures: &[String]) -> String {
    let mut lines = vec![String::from("    module procedure")];
    for (i, p) in procedures.iter().enumerate() {
        let item = if i + 1 < procedures.len() {
            format!(" {p},")
        } else {
            format!(" {p}")
        };
        if lines.last().is_some_and(|l| l.len() + item.len() > 98) {
            lines.last_mut().expect("a line").push_str(" &");
            lines.push(String::from("                    "));
        }
        lines.last_mut().expect("a line").push_str(&item);
    }
    format!(
        "  interface {name}\n{}\n  end interface {name}\n",
        lines.join("\n")
    )
}

fn names(prefix: &str, with_comms: bool) -> Vec<String> {
    let comms: &[&str] = if with_comms { &["", "_int"] } else { &[""] };
    comms
        .iter()
        .flat_map(|c| KINDS.iter().map(move |k| format!("{prefix}{}{c}", k.0)))
        .collect()
}

fn interfaces() -> String {
    let mut create = vec![
        String::from("plan_create_f08"),
        String::from("plan_create_int"),
    ];
    create.extend(names("plan_create_", true));
    create.extend(layout_mold_names());
    [
        interface("dr_reshape", &names("reshape_", true)),
        interface("dr_plan_create", &create),
        interface(
            "dr_plan_create_strided",
            &names("plan_create_strided_", true),
        ),
        interface("dr_plan_execute", &names("execute_", false)),
        interface(
            "dr_plan_execute_in_place",
            &names("execute_in_place_", false),
        ),
        interface("dr_plan_execute_begin", &names("execute_begin_", false)),
        interface("dr_plan_execute_batch", &names("execute_batch_", false)),
        interface(
            "dr_plan_execute_batch_begin",
            &names("execute_batch_begin_", false),
        ),
        interface("dr_plan_allocate_output", &names("allocate_", false)),
        interface("dr_fused_field", &names("fused_field_", false)),
    ]
    .join("\n")
}

fn specifics() -> String {
    let mut text = String::new();
    for template in [RESHAPE, CREATE_WITH_MOLD, CREATE_STRIDED] {
        for comm in COMMS {
            for kind in KINDS {
                text += &fill(template, kind, comm);
            }
        }
    }
    for comm in COMMS {
        for (suffix, ty, dtype, dims) in layout_molds() {
            text +=
                &fill(CREATE_LAYOUTS_WITH_MOLD, (&suffix, ty, dtype), comm).replace("@S", &dims);
        }
    }
    for template in [EXECUTE, BATCH, ALLOCATE, FUSED] {
        for kind in KINDS {
            text += &fill(template, kind, COMMS[0]);
        }
    }
    text
}

/// `text` with the lines between `! BEGIN GENERATED <section>` and
/// `! END GENERATED <section>` replaced by `body`.
fn with_section(text: &str, section: &str, body: &str) -> String {
    let begin = format!("! BEGIN GENERATED {section} (tests/fortran_specifics.rs)\n");
    let end = format!("  ! END GENERATED {section}");
    let start = text.find(&begin).expect("begin marker") + begin.len();
    let stop = text.find(&end).expect("end marker");
    format!("{}{body}{}", &text[..start], &text[stop..])
}

/// The head of the generated file of specifics.
const SPECIFICS_HEAD: &str = "\
! The per-type specifics of the module distreshape (fortran/distreshape.f90),
! which includes this file in its contains part. Generated by
! tests/fortran_specifics.rs: do not edit; regenerate with
! DISTRESHAPE_BLESS=1 cargo test --test fortran_specifics.
";

/// Checks that the file at `relative` holds `generated`, after writing it there
/// when blessing.
fn check_generated(relative: &str, generated: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    if std::env::var_os("DISTRESHAPE_BLESS").is_some() {
        std::fs::write(&path, generated).expect("write the generated file");
    }
    assert!(
        std::fs::read_to_string(&path).expect("the generated file") == generated,
        "{relative} is stale: run DISTRESHAPE_BLESS=1 cargo test --test fortran_specifics"
    );
}

#[test]
fn fortran_specifics_are_generated() {
    let module = "fortran/distreshape.f90";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(module);
    let committed = std::fs::read_to_string(&path).expect("the Fortran module");
    check_generated(
        module,
        &with_section(&committed, "interfaces", &interfaces()),
    );
    check_generated(
        "fortran/distreshape_specifics.inc",
        &format!("{SPECIFICS_HEAD}{}", specifics()),
    );
}
