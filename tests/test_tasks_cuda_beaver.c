/* PLACEHOLDER: tests the CUDA bodies of the beaver codelets against their CPU bodies. */
int main(void)
{
    return 77;
}
