# --- The judge every compiler's reproducer shares: each output against its float64 values. ---
RTOL, ULPS = 1e-2, 64


def far_elements(actual, expected, ulp_scale=1.0):
    # Elements off by more than RTOL of their float64 value plus ULPS ulps of the output's dtype
    # (a bfloat16 output arrives as float32: its ulps are 2^16 of float32's).
    ulp = np.spacing(np.abs(expected).astype(actual.dtype)).astype(np.float64) * ulp_scale
    return np.abs(actual.astype(np.float64) - expected) > RTOL * np.abs(expected) + ULPS * ulp


def compare(name, actual, expected):
    # One output: a line of what it holds against float64; True when it is wrong.
    ulp_scale = 1.0
    if actual.dtype.name == 'bfloat16':
        actual, ulp_scale = actual.astype(np.float32), 2.0 ** 16
    if actual.dtype.kind != expected.dtype.kind and not (actual.dtype.kind == 'f' and expected.dtype.kind == 'f'):
        print(f'  {name}: {COMPILER} returned {actual.dtype}{list(actual.shape)}, float64 reference {expected.dtype}{list(expected.shape)}')
        return True
    if actual.shape != expected.shape:
        print(f'  {name}: {COMPILER} returned shape {list(actual.shape)}, expected {list(expected.shape)}')
        return True
    if actual.dtype.kind != 'f':
        wrong = int(np.count_nonzero(actual != expected))
        print(f'  {name}: {actual.dtype}{list(actual.shape)}: {wrong} of {actual.size} elements differ from the expected values')
        return wrong > 0
    finite = np.isfinite(expected)
    nonfinite = finite & ~np.isfinite(actual)
    far = finite & np.isfinite(actual) & far_elements(actual, expected, ulp_scale)
    err = np.abs(actual.astype(np.float64) - expected)
    max_err = float(np.max(err[finite & np.isfinite(actual)], initial=0.0))
    print(f'  {name}: {actual.dtype}{list(actual.shape)}: max |actual - float64| = {max_err:.6g}; '
          f'{int(np.count_nonzero(far))} element(s) far off, {int(np.count_nonzero(nonfinite))} not finite where float64 is')
    for index in list(zip(*np.nonzero(far | nonfinite)))[:8]:
        print(f'    [{", ".join(str(int(i)) for i in index)}]: expected {float(expected[index]):.9g}, {COMPILER} {float(actual[index]):.9g}')
    return bool(far.any() or nonfinite.any())


def load_input(path, name):
    # numpy has no bfloat16: such an input is stored as its bits and handed over as ml_dtypes' bfloat16.
    a = np.load(path)
    if name in BF16_INPUTS:
        import ml_dtypes
        a = a.view(ml_dtypes.bfloat16)
    return a


def reproduce(settings, build, run, build_fails):
    # build(model path) -> (compiled, its input names in order); run(compiled, arrays) -> arrays.
    here = os.path.dirname(os.path.abspath(__file__))
    print(f'{settings}, numpy {np.__version__}')
    try:
        compiled, input_names = build(os.path.join(here, 'repro.onnx'))
    except Exception as e:  # each compiler raises its own exception types
        print(f'REPRODUCED: {COMPILER} {build_fails}:\n{e}')
        return 1
    feeds = [load_input(os.path.join(here, INPUTS_DIR, name + '.npy'), name) for name in input_names]
    try:
        actual = run(compiled, feeds)
    except Exception as e:
        print(f'REPRODUCED: {COMPILER} fails running the model:\n{e}')
        return 1
    wrong = False
    for name, value in zip(OUTPUTS, actual):
        wrong |= compare(name, np.asarray(value), np.load(os.path.join(here, EXPECTED_DIR, name + '.npy')))
    print(f'REPRODUCED: {COMPILER}\'s outputs are wrong' if wrong else f'NOT REPRODUCED: {COMPILER}\'s outputs agree with float64')
    return 1 if wrong else 0
